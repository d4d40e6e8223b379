package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/telemetry"
	analyticsv1 "github.com/chorus-sms/chorus/proto/gen/go/analytics/v1"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	campaignsv1 "github.com/chorus-sms/chorus/proto/gen/go/campaigns/v1"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	pollsv1 "github.com/chorus-sms/chorus/proto/gen/go/polls/v1"
	webhooksv1 "github.com/chorus-sms/chorus/proto/gen/go/webhooks/v1"
)

// backendConns are the services whose REST routes the mux serves; a nil connection other than
// contacts leaves that service's routes out.
type backendConns struct {
	contacts, orgs, billing, messaging, campaigns, polls, analytics, webhooks *grpc.ClientConn
}

// newAPIMux is the grpc-gateway mux serving the REST routes of the HTTP rules. The generated
// handlers call through answerConn (see answers.go); nothing else may, as the messages it
// answers with are only fit for jsonMarshaler.
func newAPIMux(ctx context.Context, b backendConns, idem *idempotency, log *slog.Logger) (*runtime.ServeMux, error) {
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, newJSONMarshaler()),
		// Nothing from the HTTP request travels as metadata except what forwardPrincipal sets,
		// so a client cannot smuggle in x-chorus-* keys; nothing a service sets reaches the
		// client as a header (no Grpc-Metadata-*, no httpcode.Header).
		runtime.WithIncomingHeaderMatcher(noHeaders),
		runtime.WithOutgoingHeaderMatcher(noHeaders),
		runtime.WithOutgoingTrailerMatcher(noHeaders),
		runtime.WithMetadata(forwardPrincipal),
		runtime.WithForwardResponseOption(writeHTTPCode),
		runtime.WithErrorHandler(errorHandler(log)),
		runtime.WithRoutingErrorHandler(routingErrorHandler),
		// Innermost, the Idempotency-Key: it needs the route recordRoute labels, and a query
		// knownQuery refuses never claims a key.
		runtime.WithMiddlewares(recordRoute, knownQuery, idem.middleware),
		// No POST-as-GET fallback or method override: a request's method is what the access
		// check saw.
		runtime.WithDisablePathLengthFallback(),
		runtime.WithDisableHTTPMethodOverride(),
		// Routes match on the path as sent and each parameter is decoded once: %2B12025550143
		// reaches the service as +12025550143, and an escaped slash stays inside its parameter
		// instead of splitting the path (the legacy default matches the decoded path, where
		// 202%2F555 is two segments and no route).
		runtime.WithUnescapingMode(runtime.UnescapingModeAllExceptReserved),
		// A sized answer leaves in one write; unsized, net/http chunks anything over 2 KB (a
		// page of contacts) into several writes and a closing chunk.
		runtime.WithWriteContentLength(),
	)
	if err := contactsv1.RegisterContactsServiceHandlerClient(ctx, mux, contactsv1.NewContactsServiceClient(answerConn{b.contacts})); err != nil {
		return nil, fmt.Errorf("gateway: register contacts routes: %w", err)
	}
	// The import's file travels as a stream both ways, so its client reads messages.
	contacts := contactsv1.NewContactsServiceClient(b.contacts)
	if err := mux.HandlePath(http.MethodPost, importsPath, importHandler(mux, contacts)); err != nil {
		return nil, fmt.Errorf("gateway: register the contact import: %w", err)
	}
	if err := mux.HandlePath(http.MethodGet, rejectedPath, rejectedHandler(mux, contacts)); err != nil {
		return nil, fmt.Errorf("gateway: register the import's rejected rows: %w", err)
	}
	if err := mux.HandlePath(http.MethodGet, consentExportPath, consentExportHandler(mux, contacts)); err != nil {
		return nil, fmt.Errorf("gateway: register the consent export: %w", err)
	}
	if b.orgs != nil {
		if err := orgsv1.RegisterOrgsServiceHandlerClient(ctx, mux, orgsv1.NewOrgsServiceClient(answerConn{b.orgs})); err != nil {
			return nil, fmt.Errorf("gateway: register organization settings routes: %w", err)
		}
	}
	if b.billing != nil {
		if err := billingv1.RegisterBillingServiceHandlerClient(ctx, mux, billingv1.NewBillingServiceClient(answerConn{b.billing})); err != nil {
			return nil, fmt.Errorf("gateway: register billing routes: %w", err)
		}
	}
	if b.messaging != nil {
		if err := messagingv1.RegisterMessagingServiceHandlerClient(ctx, mux, messagingv1.NewMessagingServiceClient(answerConn{b.messaging})); err != nil {
			return nil, fmt.Errorf("gateway: register messaging routes: %w", err)
		}
		// The thread list reads the pages it receives, so its client reads them as messages.
		client := messagingv1.NewMessagingServiceClient(b.messaging)
		if err := mux.HandlePath(http.MethodGet, conversationsPath, conversationsHandler(mux, client)); err != nil {
			return nil, fmt.Errorf("gateway: register the conversation list: %w", err)
		}
	}
	if b.campaigns != nil {
		if err := campaignsv1.RegisterCampaignsServiceHandlerClient(ctx, mux, campaignsv1.NewCampaignsServiceClient(answerConn{b.campaigns})); err != nil {
			return nil, fmt.Errorf("gateway: register campaigns routes: %w", err)
		}
	}
	if b.polls != nil {
		if err := pollsv1.RegisterPollsServiceHandlerClient(ctx, mux, pollsv1.NewPollsServiceClient(answerConn{b.polls})); err != nil {
			return nil, fmt.Errorf("gateway: register polls routes: %w", err)
		}
	}
	if b.analytics != nil {
		routed := analyticsv1.NewAnalyticsServiceClient(answerConn{b.analytics})
		if err := analyticsv1.RegisterAnalyticsServiceHandlerClient(ctx, mux, routed); err != nil {
			return nil, fmt.Errorf("gateway: register analytics routes: %w", err)
		}
		// The export reads the messages it receives, so its client reads them as messages.
		client := analyticsv1.NewAnalyticsServiceClient(b.analytics)
		if err := mux.HandlePath(http.MethodGet, exportPath, exportHandler(mux, client)); err != nil {
			return nil, fmt.Errorf("gateway: register the analytics export: %w", err)
		}
	}
	if b.webhooks != nil {
		if err := webhooksv1.RegisterWebhooksServiceHandlerClient(ctx, mux, webhooksv1.NewWebhooksServiceClient(answerConn{b.webhooks})); err != nil {
			return nil, fmt.Errorf("gateway: register webhooks routes: %w", err)
		}
	}
	return mux, nil
}

func noHeaders(string) (string, bool) { return "", false }

// writeHTTPCode writes the success status the service chose with httpcode.Set.
func writeHTTPCode(ctx context.Context, w http.ResponseWriter, _ proto.Message) error {
	md, ok := runtime.ServerMetadataFromContext(ctx)
	if !ok {
		return nil
	}
	vals := md.HeaderMD.Get(httpcode.Header)
	if len(vals) == 0 {
		return nil
	}
	code, err := strconv.Atoi(vals[0])
	if err != nil || code < 200 || code > 299 {
		return fmt.Errorf("service sent %s %q, want a 2xx status", httpcode.Header, vals[0])
	}
	w.WriteHeader(code)
	return nil
}

// routes assembles the whole surface. /healthz, /readyz, /metrics, /openapi.json and the API
// reference (/docs, docs.go) are open;
// the carrier webhooks and short-link redirects (public, nil without messaging) are open too,
// bounded by the request deadline; everything under /api passes authentication, then tenancy
// (org header, rate limit, access), then the grpc-gateway mux; any other path gets the mux's
// 404 in the shared error body.
func (g *Gateway) routes(api *runtime.ServeMux, public *publicRoutes, auth *authenticator, access *accessChecker, limiter *rateLimiter, m *metrics) http.Handler {
	ops := map[string]http.HandlerFunc{
		"/healthz":      healthz,
		"/readyz":       g.readyz,
		"/metrics":      m.handler().ServeHTTP,
		"/openapi.json": serveOpenAPI,
	}
	maps.Copy(ops, docsRoutes())
	protected := auth.middleware(requestDeadline(g.cfg.RequestTimeout, tenancy(access, limiter, g.log, api)))
	// An import's upload lasts as long as its file takes to send: no request deadline, and its
	// own body limit.
	upload := auth.middleware(tenancy(access, limiter, g.log, api))
	dispatch := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r.Context())
		if h, ok := ops[r.URL.Path]; ok {
			info.route = r.URL.Path
			if !isRead(r.Method) {
				allowOnly(w, r, "GET, HEAD")
				return
			}
			h(w, r)
			return
		}
		if !readableURL(w, r) {
			return
		}
		if h, route, ok := public.match(r.URL.Path); ok {
			labelRoute(r, route)
			requestDeadline(g.cfg.RequestTimeout, h).ServeHTTP(w, r)
			return
		}
		if isImportUpload(r) {
			if capBody(w, r, g.cfg.MaxImportBytes) {
				info.route = routeAPIUnrouted
				upload.ServeHTTP(w, r)
			}
			return
		}
		if !capBody(w, r, g.cfg.MaxBodyBytes) {
			return
		}
		if r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/") {
			info.route = routeAPIUnrouted
			protected.ServeHTTP(w, detachKeyed(r))
			return
		}
		api.ServeHTTP(w, r)
	})
	h := g.observe(g.recoverPanics(dispatch), m)
	if !telemetry.Tracing() {
		return carryTrace(h)
	}
	return otelhttp.NewHandler(h, "chorus-gateway",
		otelhttp.WithFilter(func(r *http.Request) bool { return !quietPaths[r.URL.Path] }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	)
}

// carryTrace gives each request the W3C trace context its caller sent, for the log lines and
// the services' calls: with no exporter, a span per request would be recorded nowhere.
func carryTrace(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") == "" && r.Header.Get("baggage") == "" {
			next.ServeHTTP(w, r)
			return
		}
		ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// recoverPanics turns a panic in a handler into a logged 500 in the shared error body, instead
// of a dropped connection.
func (g *Gateway) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler { // net/http's way to abort a response: let it through
				panic(p)
			}
			g.log.ErrorContext(r.Context(), "panic in handler", "request_id", infoFrom(r.Context()).id, "panic", p)
			writeError(w, r, internalError)
		}()
		next.ServeHTTP(w, r)
	})
}

// capBody answers 413 for a declared body over the limit, and caps the rest (chunked bodies
// have no length up front): reading past the limit fails and flags the request, so the error
// handler answers 413 instead of the decoder's 400.
func capBody(w http.ResponseWriter, r *http.Request, limit int64) bool {
	if r.ContentLength > limit {
		writeError(w, r, payloadTooLarge)
		return false
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = cappedBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit), info: infoFrom(r.Context())}
	}
	return true
}

type cappedBody struct {
	io.ReadCloser
	info *requestInfo
}

func (b cappedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		b.info.bodyTooLarge = true
	}
	return n, err
}
