// Command contacts runs the contacts service on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // contact timezones are validated against the IANA database, present or not on the host

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/services/contacts"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	env := envconfig.New()
	cfg := contacts.ConfigFromEnv(env)
	addr := env.String("CHORUS_GRPC_ADDR", "127.0.0.1:9102")
	if err := env.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "contacts: bad configuration:", err)
		os.Exit(2)
	}
	cfg.Logger = log
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, cfg, addr); err != nil {
		log.Error("contacts stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg contacts.Config, addr string) error {
	svc, err := contacts.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer svc.Close()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	cfg.Logger.Info("contacts serving", "addr", lis.Addr().String())
	return svc.Serve(ctx, lis)
}
