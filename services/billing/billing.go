// Package billing is the billing service: accounts (pricing model, billing status,
// subscription, portal URLs), the credit ledger with its holds, and the credit product catalog.
// This is the public entry used by its own main and by the all-in-one binary.
package billing

import (
	"context"
	"fmt"
	"log/slog"
	"net"

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

// Config is the billing process configuration.
type Config struct {
	DatabaseURL string // CHORUS_DATABASE_URL
	Logger      *slog.Logger
}

// ConfigFromEnv reads the CHORUS_* variables of the billing service.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		DatabaseURL: r.String("CHORUS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/chorus?sslmode=disable"),
	}
}

// Service is a running billing service.
type Service struct {
	pool *pgxpool.Pool
	grpc *grpc.Server
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
	srv := rpcserver.New(log, server.UnscopedMethods...)
	billingv1.RegisterBillingServiceServer(srv, server.New(store.New(pool)))
	return &Service{pool: pool, grpc: srv}, nil
}

// Serve answers gRPC on lis until ctx is done, then drains in-flight calls.
func (s *Service) Serve(ctx context.Context, lis net.Listener) error {
	if err := rpcserver.Serve(ctx, s.grpc, lis); err != nil {
		return fmt.Errorf("billing: %w", err)
	}
	return nil
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
