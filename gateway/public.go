package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"strings"

	"google.golang.org/grpc/metadata"

	messagingclient "github.com/chorus-sms/chorus/pkg/clients/messaging"
	"github.com/chorus-sms/chorus/pkg/tenant"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
)

// Route labels of the public routes.
const (
	routeShortLink = "/l/{code}"
	routeWebhook   = "/webhooks/{provider}/"
)

// providerName is the carrier adapter segment of a webhook path.
var providerName = regexp.MustCompile(`^[a-z]+$`)

// webhookKinds maps the last segment of a webhook path to the callback it carries.
var webhookKinds = map[string]messagingv1.WebhookKind{
	"inbound": messagingv1.WebhookKind_WEBHOOK_KIND_INBOUND,
	"status":  messagingv1.WebhookKind_WEBHOOK_KIND_STATUS,
}

// publicRoutes are the routes reached without a token or an organization header: carrier
// webhooks (the carrier's signature authenticates them, checked by the messaging service) and
// short-link redirects (anyone with the link may follow it). They are not rate-limited per
// organization, which a caller here has none of.
type publicRoutes struct {
	messaging *messagingclient.Client
	log       *slog.Logger
}

// match returns the handler of a public route and its label; false when path is none of
// them (or the gateway routes no messaging service, p is nil).
func (p *publicRoutes) match(path string) (http.Handler, string, bool) {
	if p == nil {
		return nil, "", false
	}
	if code, ok := strings.CutPrefix(path, "/l/"); ok {
		if code == "" || strings.Contains(code, "/") {
			return nil, "", false
		}
		return p.shortLink(code), routeShortLink, true
	}
	rest, ok := strings.CutPrefix(path, "/webhooks/")
	if !ok {
		return nil, "", false
	}
	provider, kindName, _ := strings.Cut(rest, "/")
	kind, ok := webhookKinds[kindName]
	if !ok || !providerName.MatchString(provider) {
		return nil, "", false
	}
	return p.webhook(provider, kind), routeWebhook + kindName, true
}

// fail answers a failed messaging call in the shared error body, logging server-side failures.
func (p *publicRoutes) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := fromStatus(err)
	if e.Status >= http.StatusInternalServerError {
		p.log.WarnContext(r.Context(), "backend call failed", "request_id", infoFrom(r.Context()).id, "status", e.Status, "err", err)
	}
	writeError(w, r, e)
}

// withRequestID sends the request id along on calls made outside the grpc-gateway mux, so the
// service's log lines name it.
func withRequestID(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, tenant.MDRequestID, infoFrom(ctx).id)
}

// allowOnly answers 405 naming the allowed methods.
func allowOnly(w http.ResponseWriter, r *http.Request, methods string) {
	w.Header().Set("Allow", methods)
	writeError(w, r, methodNotAllowed(r.Method))
}
