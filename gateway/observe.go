package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Route labels of requests that never reached a route handler; real routes are labelled with
// their pattern (e.g. /api/contacts/{id}), so metrics never carry raw paths or ids.
const (
	routeAPIUnrouted = "/api/**" // rejected before routing (401, 403, 429, 413) or no such /api route
	routeUnmatched   = "unmatched"
)

// requestInfo is what the gateway learns about a request on its way through; the outermost
// handler creates it and reads it back for the log line and the metrics. Every stage runs on
// the request's goroutine, so it needs no lock.
type requestInfo struct {
	id           string
	route        string
	org, user    string
	bodyTooLarge bool
	answer       *[]byte // the pooled buffer holding the answer's JSON (see answerCodec)
}

type infoKey struct{}

// infoFrom returns the request's info; an empty one when the request did not pass observe.
func infoFrom(ctx context.Context) *requestInfo {
	if info, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		return info
	}
	return &requestInfo{}
}

// saneRequestID accepts a caller's X-Request-Id only when it is short and plain, so it cannot
// forge log lines or bloat metadata.
var saneRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func requestID(incoming string) string {
	if saneRequestID.MatchString(incoming) {
		return incoming
	}
	return uuid.NewString()
}

// quietPaths are probes and scrapes: counted, but not logged on every hit.
var quietPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// observe assigns the request id, then records one log line and the metrics per request. The
// line names the route pattern, never the raw path or query (they can carry phone numbers),
// and never any header.
func (g *Gateway) observe(next http.Handler, m *metrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &requestInfo{id: requestID(r.Header.Get("X-Request-Id")), route: routeUnmatched}
		w.Header().Set("X-Request-Id", info.id)
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		start := time.Now()
		res := &recorder{ResponseWriter: w, Code: http.StatusOK}
		next.ServeHTTP(res, r)
		res.Duration = time.Since(start)
		if info.answer != nil { // written: the buffer is free again
			marshalBuffers.Put(info.answer)
			info.answer = nil
		}
		m.observe(r.Method, info.route, res.Code, res.Duration)
		if quietPaths[r.URL.Path] && res.Code < http.StatusInternalServerError {
			return
		}
		level := slog.LevelInfo
		if res.Code >= http.StatusInternalServerError {
			level = slog.LevelWarn
		}
		attrs := []slog.Attr{
			slog.String("request_id", info.id),
			slog.String("method", r.Method),
			slog.String("route", info.route),
			slog.Int("status", res.Code),
			slog.Float64("duration_ms", float64(res.Duration.Microseconds())/1000),
			slog.Int64("bytes", res.Written),
		}
		if info.org != "" {
			attrs = append(attrs, slog.String("org", info.org))
		}
		if info.user != "" {
			attrs = append(attrs, slog.String("user", info.user))
		}
		if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
			attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
		g.log.LogAttrs(r.Context(), level, "http request", attrs...)
	})
}

// recorder notes a response's status and size as httpsnoop.CaptureMetrics did (the first
// status that is not informational, else 200; the bytes of the body), without its per-request
// wrapper and closures.
type recorder struct {
	http.ResponseWriter
	Code          int
	Written       int64
	Duration      time.Duration
	headerWritten bool
}

func (w *recorder) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if !(code >= 100 && code <= 199) && !w.headerWritten {
		w.Code = code
		w.headerWritten = true
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.Written += int64(n)
	w.headerWritten = true
	return n, err
}

// Flush passes through for streamed answers (the export).
func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// recordRoute runs inside the grpc-gateway mux once a route matched: it labels the request,
// its span and its otelhttp metrics with the route pattern.
func recordRoute(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if p, ok := runtime.HTTPPattern(r.Context()); ok {
			labelRoute(r, strings.ReplaceAll(p.String(), "=*}", "}")) // /api/contacts/{id=*} → {id}
		}
		next(w, r, params)
	}
}

// labelRoute names the route a request matched in its log line, metrics and span.
func labelRoute(r *http.Request, route string) {
	infoFrom(r.Context()).route = route
	span := trace.SpanFromContext(r.Context())
	span.SetName(r.Method + " " + route)
	span.SetAttributes(attribute.String("http.route", route))
	if l, ok := otelhttp.LabelerFromContext(r.Context()); ok {
		l.Add(attribute.String("http.route", route))
	}
}

// requestDeadline bounds the backend calls of one request (the access check and the service
// call).
func requestDeadline(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
