package gateway

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
)

// csvChunk is a message of a service's CSV stream.
type csvChunk interface{ GetData() []byte }

// streamCSV answers a service's stream of CSV chunks as a text/csv attachment named filename,
// each chunk written as it arrives. The first message, or the call's status, says whether the
// request is answered at all (a refusal is the shared error body); after it the status is sent,
// and a failure aborts the connection, so a truncated file never looks complete.
func streamCSV[M csvChunk](w http.ResponseWriter, r *http.Request, mux *runtime.ServeMux, filename string, recv func() (M, error)) {
	msg, err := recv()
	if err != nil && !errors.Is(err, io.EOF) {
		runtime.HTTPError(r.Context(), mux, &runtime.JSONPb{}, w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": filename}))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	for err == nil {
		if _, werr := w.Write(msg.GetData()); werr != nil {
			return
		}
		msg, err = recv()
	}
	if !errors.Is(err, io.EOF) {
		panic(http.ErrAbortHandler)
	}
}
