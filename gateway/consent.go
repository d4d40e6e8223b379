package gateway

import (
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// consentExportPath is the organization's consent history as CSV: a file streamed from
// contacts, so a route of its own on the mux (after the same authentication, tenancy and rate
// limit as every /api route) rather than an HTTP rule.
const consentExportPath = "/api/consent/export"

// consentExportHandler streams contacts' consent export as a text/csv attachment.
func consentExportHandler(mux *runtime.ServeMux, client contactsv1.ContactsServiceClient) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		ctx := r.Context()
		if p, ok := tenant.FromContext(ctx); ok {
			ctx = tenant.AppendToOutgoing(ctx, p)
		}
		q := r.URL.Query()
		stream, err := client.ExportConsent(ctx, &contactsv1.ExportConsentRequest{Start: q.Get("start"), End: q.Get("end")})
		if err != nil {
			runtime.HTTPError(ctx, mux, &runtime.JSONPb{}, w, r, err)
			return
		}
		streamCSV(w, r, mux, "consent.csv", stream.Recv)
	}
}
