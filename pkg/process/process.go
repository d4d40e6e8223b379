// Package process is what every Chorus binary's main shares: a JSON logger with trace ids,
// tracing (pkg/telemetry), configuration from CHORUS_* variables that stops the process naming
// a bad one, SIGINT/SIGTERM handling, a listener, and a graceful stop.
package process

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/telemetry"
)

// Server is a built service or gateway: Serve answers on lis until ctx ends; Close releases
// what New acquired.
type Server interface {
	Serve(ctx context.Context, lis net.Listener) error
	Close()
}

// Setup reads a process's variables from env and returns its listen address and a constructor.
// Failures are recorded in env; the constructor is not called when there are any.
type Setup func(env *envconfig.Reader, log *slog.Logger) (addr string, build func(context.Context) (Server, error))

// Main runs the process named name until SIGINT or SIGTERM. With CHORUS_OPS_ADDR set it also
// serves /healthz, /readyz and /metrics there. It exits 2 on bad configuration and 1 when the
// server fails to start or stops with an error.
func Main(name string, setup Setup) {
	TuneGC()
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(os.Stderr, nil))).With("service", name)
	env := envconfig.New()
	addr, opsAddr, build := Configure(env, setup, log)
	if err := env.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: bad configuration: %v\n", name, err)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, name, addr, opsAddr, build, log); err != nil {
		log.Error("stopped", "err", err)
		os.Exit(1)
	}
}

// Configure reads every variable Main reads from env: the process's own through setup, and
// CHORUS_OPS_ADDR, where the ops endpoints answer ("" for none). The manifests test calls it
// to learn what a Deployment must give each process.
func Configure(env *envconfig.Reader, setup Setup, log *slog.Logger) (addr, opsAddr string, build func(context.Context) (Server, error)) {
	addr, build = setup(env, log)
	return addr, env.String("CHORUS_OPS_ADDR", ""), build
}

func run(ctx context.Context, name, addr, opsAddr string, build func(context.Context) (Server, error), log *slog.Logger) error {
	shutdown, err := telemetry.Setup(ctx, name)
	if err != nil {
		return err
	}
	defer func() {
		if err := shutdown(context.WithoutCancel(ctx)); err != nil {
			log.Warn("trace export did not flush", "err", err)
		}
	}()
	srv, err := build(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	log.Info("serving", "addr", lis.Addr().String())
	if opsAddr == "" {
		return srv.Serve(ctx, lis)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return serveOps(gctx, opsAddr, srv, log) })
	g.Go(func() error { return srv.Serve(gctx, lis) })
	return g.Wait()
}
