package gateway

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"github.com/chorus-sms/chorus/gateway/internal/restjson"
	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
	"github.com/chorus-sms/chorus/pkg/uploadlen"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// The contact import's own routes: the upload is a CSV body streamed to contacts as it
// arrives (no size cap but CHORUS_HTTP_MAX_IMPORT_BYTES, no request deadline: a large file
// takes as long as it takes to send), and the rejected rows come back as CSV.
const (
	importsPath  = "/api/contacts/imports"
	rejectedPath = "/api/contacts/imports/{id}/rejected"
	csvMediaType = "text/csv"
)

// importChunk is how much of the body one gRPC message carries.
const importChunk = 64 << 10

var notCSV = apiError{
	Status: http.StatusUnsupportedMediaType, Code: apierr.ReasonUnsupportedMediaType,
	Message: "the body must be " + csvMediaType,
}

// isImportUpload reports whether r is the import upload, which routes treats apart.
func isImportUpload(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == importsPath
}

// importHandler streams the body to contacts and answers 202 with the queued import.
func importHandler(mux *runtime.ServeMux, client contactsv1.ContactsServiceClient) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != csvMediaType {
			writeError(w, r, notCSV)
			return
		}
		ctx := r.Context()
		if p, ok := tenant.FromContext(ctx); ok {
			ctx = tenant.AppendToOutgoing(ctx, p)
		}
		if r.ContentLength > 0 {
			// Declared, and within the limit (capBody answered 413 before reading otherwise):
			// contacts may stage and merge the file in chunks as it arrives.
			ctx = uploadlen.AppendToOutgoing(ctx, r.ContentLength)
		}
		stream, err := client.ImportContacts(ctx)
		if err != nil {
			runtime.HTTPError(ctx, mux, &runtime.JSONPb{}, w, r, err)
			return
		}
		buf := make([]byte, importChunk)
		for {
			n, rerr := r.Body.Read(buf)
			if n > 0 {
				// Send copies nothing once it returns, so buf is reused; io.EOF means the
				// service ended the call early, and CloseAndRecv says why.
				if err := stream.Send(&contactsv1.ImportContactsRequest{Data: buf[:n]}); err != nil {
					break
				}
			}
			if errors.Is(rerr, io.EOF) {
				break
			}
			if rerr != nil {
				// The body failed (too large, or the client went away): the call is
				// canceled. Nothing of a body of unknown length is kept; of one of declared
				// length, the chunks staged so far stay, and the import is marked failed.
				if tooLarge := (*http.MaxBytesError)(nil); errors.As(rerr, &tooLarge) {
					writeError(w, r, payloadTooLarge)
				} else {
					writeError(w, r, apiError{Status: http.StatusBadRequest, Code: apierr.ReasonValidation, Message: "the body could not be read"})
				}
				return
			}
		}
		res, err := stream.CloseAndRecv()
		if err != nil {
			runtime.HTTPError(ctx, mux, &runtime.JSONPb{}, w, r, err)
			return
		}
		writeImport(w, r, mux, http.StatusAccepted, res.GetContactImport())
	}
}

// rejectedHandler streams an import's rejected rows as a text/csv attachment.
func rejectedHandler(mux *runtime.ServeMux, client contactsv1.ContactsServiceClient) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		ctx := r.Context()
		if p, ok := tenant.FromContext(ctx); ok {
			ctx = tenant.AppendToOutgoing(ctx, p)
		}
		stream, err := client.StreamRejectedRows(ctx, &contactsv1.StreamRejectedRowsRequest{Id: params["id"]})
		if err != nil {
			runtime.HTTPError(ctx, mux, &runtime.JSONPb{}, w, r, err)
			return
		}
		streamCSV(w, r, mux, "rejected-"+params["id"]+".csv", stream.Recv)
	}
}

// writeImport answers m as every route prints it, with status.
func writeImport(w http.ResponseWriter, r *http.Request, mux *runtime.ServeMux, status int, m *contactsv1.ContactImport) {
	b, err := restjson.Options.Marshal(m)
	if err != nil {
		runtime.HTTPError(r.Context(), mux, &runtime.JSONPb{}, w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
