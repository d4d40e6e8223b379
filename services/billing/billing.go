// Package billing is the billing service: accounts (pricing model, billing status,
// subscription, portal URLs), the credit ledger with its holds, the periodic renewal of
// full_service plans' included credits, and the credit product catalog. This is the public
// entry used by its own main and by the all-in-one binary.
package billing

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	"github.com/chorus-sms/chorus/services/billing/internal/server"
	"github.com/chorus-sms/chorus/services/billing/internal/store"
	"github.com/chorus-sms/chorus/services/billing/migrations"
)

// Schema is the PostgreSQL schema the service owns.
const Schema = "billing"

// DefaultRenewalInterval is how often the service looks for full_service periods that ended.
// It bounds how long an ended period's included credits stay spendable (and shown in the
// billing status) before they expire and the new period's are granted.
const DefaultRenewalInterval = time.Minute

// Config is the billing process configuration.
type Config struct {
	DatabaseURL     string        // CHORUS_DATABASE_URL
	RenewalInterval time.Duration // CHORUS_RENEWAL_INTERVAL; 0 means DefaultRenewalInterval
	Logger          *slog.Logger
}

// ConfigFromEnv reads the CHORUS_* variables of the billing service.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		DatabaseURL:     r.String("CHORUS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/chorus?sslmode=disable"),
		RenewalInterval: r.Duration("CHORUS_RENEWAL_INTERVAL", DefaultRenewalInterval),
	}
}

// Service is a running billing service.
type Service struct {
	pool  *pgxpool.Pool
	grpc  *grpc.Server
	store *store.Store
	log   *slog.Logger
	every time.Duration // between renewal sweeps
}

// New connects, migrates and builds the gRPC server.
func New(ctx context.Context, cfg Config) (*Service, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	pool, err := pgdb.Open(ctx, cfg.DatabaseURL, Schema)
	if err != nil {
		return nil, fmt.Errorf("billing: %w", err)
	}
	if err := pgdb.Migrate(ctx, pool, Schema, migrations.FS); err != nil {
		pool.Close()
		return nil, fmt.Errorf("billing: %w", err)
	}
	st := store.New(pool)
	srv := rpcserver.New(log, server.UnscopedMethods...)
	billingv1.RegisterBillingServiceServer(srv, server.New(st))
	every := cfg.RenewalInterval
	if every <= 0 {
		every = DefaultRenewalInterval
	}
	return &Service{pool: pool, grpc: srv, store: st, log: log, every: every}, nil
}

// Serve renews ended full_service periods and answers gRPC on lis until ctx is done, then
// drains in-flight calls.
func (s *Service) Serve(ctx context.Context, lis net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		s.renewLoop(ctx)
	}()
	err := rpcserver.Serve(ctx, s.grpc, lis)
	cancel()
	<-swept
	if err != nil {
		return fmt.Errorf("billing: %w", err)
	}
	return nil
}

// renewLoop sweeps now, so a restart catches up at once, and then every s.every until ctx is
// done. A failed sweep is logged and retried at the next tick; renewals are idempotent.
func (s *Service) renewLoop(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		n, err := s.store.RenewDue(ctx, time.Now())
		if err != nil && ctx.Err() == nil {
			s.log.ErrorContext(ctx, "billing: renewing periods failed", "err", err, "renewed", n)
		} else if n > 0 {
			s.log.InfoContext(ctx, "billing: renewed periods", "renewed", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Ready reports whether the service's database answers (the ops /readyz endpoint).
func (s *Service) Ready(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("billing: database: %w", err)
	}
	return nil
}

// Close stops the gRPC server and releases the pool.
func (s *Service) Close() {
	s.grpc.Stop()
	s.pool.Close()
}
