package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Readier is implemented by servers that can tell whether they can do their work now (their
// database answers, say); /readyz reports it.
type Readier interface {
	Ready(ctx context.Context) error
}

// opsHandler serves /healthz (the process runs), /readyz (srv is ready) and /metrics (the
// process's Prometheus registry: Go runtime, process, and every gRPC method by code).
func opsHandler(srv Server) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if rd, ok := srv.(Readier); ok {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			if err := rd.Ready(ctx); err != nil {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /metrics", promhttp.Handler())
	return mux
}

// serveOps answers the ops endpoints on addr until ctx ends.
func serveOps(ctx context.Context, addr string, srv Server, log *slog.Logger) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ops listen %s: %w", addr, err)
	}
	hs := &http.Server{Handler: opsHandler(srv), ReadHeaderTimeout: 5 * time.Second}
	stop := context.AfterFunc(ctx, func() { _ = hs.Close() })
	defer stop()
	log.Info("ops endpoints serving", "addr", lis.Addr().String())
	if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("ops serve: %w", err)
	}
	return nil
}
