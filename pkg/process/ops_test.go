package process

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// server is a minimal Server whose readiness the test switches.
type server struct{ ready error }

func (s *server) Serve(ctx context.Context, _ net.Listener) error { <-ctx.Done(); return nil }
func (s *server) Close()                                          {}
func (s *server) Ready(context.Context) error                     { return s.ready }

func TestOpsEndpoints(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	srv := &server{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveOps(ctx, addr, srv, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	get := func(path string) (int, string) {
		var res *http.Response
		require.Eventually(t, func() bool {
			res, err = http.Get("http://" + addr + path)
			return err == nil
		}, 5*time.Second, 20*time.Millisecond)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, _ := get("/healthz")
	assert.Equal(t, 200, code)
	code, _ = get("/readyz")
	assert.Equal(t, 200, code)
	srv.ready = errors.New("database down")
	code, body := get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.NotContains(t, body, "database down", "no internals on an open port")
	code, body = get("/metrics")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, "go_goroutines")
	code, _ = get("/nothing")
	assert.Equal(t, 404, code)
	cancel()
	assert.NoError(t, <-done)
}
