package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/gateway/openapi"
)

// readyTimeout bounds each backend's health check.
const readyTimeout = 2 * time.Second

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// healthz answers while the process can serve HTTP at all.
func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when every service the gateway routes to answers the standard gRPC
// health check with SERVING and the gateway's own database (the durable Idempotency-Key
// answers, without which the POSTs that send or spend answer 503) answers; otherwise 503,
// naming each one's state. Redis is not checked: the rate limiter fails open without it.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	states := make([]string, len(g.backends))
	var wg sync.WaitGroup
	database := "ok"
	wg.Go(func() {
		if err := g.pool.Ping(ctx); err != nil {
			database = "unavailable"
		}
	})
	for i, b := range g.backends {
		wg.Go(func() {
			res, err := healthpb.NewHealthClient(b.conn).Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				states[i] = status.Code(err).String()
				return
			}
			states[i] = res.GetStatus().String()
		})
	}
	wg.Wait()
	services := make(map[string]string, len(g.backends))
	ready := database == "ok"
	for i, b := range g.backends {
		services[b.name] = states[i]
		ready = ready && states[i] == healthpb.HealthCheckResponse_SERVING.String()
	}
	if !ready {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "services": services, "database": database})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "services": services, "database": database})
}

// serveOpenAPI serves the OpenAPI document the gateway was generated with.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapi.Spec)
}
