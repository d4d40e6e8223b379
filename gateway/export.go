package gateway

import (
	"mime"
	"net/http"
	"strconv"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"github.com/chorus-sms/chorus/pkg/tenant"
	analyticsv1 "github.com/chorus-sms/chorus/proto/gen/go/analytics/v1"
)

// exportPath is the analytics CSV export: a file, not JSON, so it is a route of its own on
// the mux (after the same authentication, tenancy and rate limit as every /api route) rather
// than an HTTP rule.
const exportPath = "/api/analytics/export"

// exportHandler asks analytics for the export and answers it as a text/csv attachment; an
// error answers the shared error body as any route's does.
func exportHandler(mux *runtime.ServeMux, client analyticsv1.AnalyticsServiceClient) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		ctx := r.Context()
		if p, ok := tenant.FromContext(ctx); ok {
			ctx = tenant.AppendToOutgoing(ctx, p)
		}
		q := r.URL.Query()
		res, err := client.ExportCampaigns(ctx, &analyticsv1.ExportCampaignsRequest{
			Type: q.Get("type"), StartDate: q.Get("startDate"), EndDate: q.Get("endDate"),
		})
		if err != nil {
			runtime.HTTPError(ctx, mux, &runtime.JSONPb{}, w, r, err)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": res.GetFilename()}))
		h.Set("Content-Length", strconv.Itoa(len(res.GetCsv())))
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(res.GetCsv())
	}
}
