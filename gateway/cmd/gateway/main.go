// Command gateway runs the REST gateway on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/envconfig"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	env := envconfig.New()
	cfg := gateway.ConfigFromEnv(env)
	if err := env.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "gateway: bad configuration:", err)
		os.Exit(2)
	}
	cfg.Logger = log
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		log.Error("gateway stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg gateway.Config) error {
	gw, err := gateway.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer gw.Close()
	lis, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTPAddr, err)
	}
	cfg.Logger.Info("gateway serving", "addr", lis.Addr().String())
	return gw.Serve(ctx, lis)
}
