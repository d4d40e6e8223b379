// Command orgs runs the organizations service on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/services/orgs"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	env := envconfig.New()
	cfg := orgs.ConfigFromEnv(env)
	addr := env.String("CHORUS_GRPC_ADDR", "127.0.0.1:9101")
	if err := env.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "orgs: bad configuration:", err)
		os.Exit(2)
	}
	cfg.Logger = log
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, cfg, addr); err != nil {
		log.Error("orgs stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg orgs.Config, addr string) error {
	svc, err := orgs.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer svc.Close()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	cfg.Logger.Info("orgs serving", "addr", lis.Addr().String())
	return svc.Serve(ctx, lis)
}
