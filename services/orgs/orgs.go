// Package orgs is the organizations and memberships service: the public entry used by its own
// main and by the all-in-one binary.
package orgs

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/orgs/internal/server"
	"github.com/chorus-sms/chorus/services/orgs/internal/store"
	"github.com/chorus-sms/chorus/services/orgs/migrations"
)

// Schema is the PostgreSQL schema the service owns.
const Schema = "orgs"

// DefaultDBMaxConns bounds the pool (CHORUS_DB_MAX_CONNS): orgs only answers short gRPC
// reads and writes, and the gateways cache membership checks in process.
const DefaultDBMaxConns = 4

// Config is the orgs process configuration.
type Config struct {
	DatabaseURL string // CHORUS_DATABASE_URL
	RedisURL    string // CHORUS_REDIS_URL
	DBMaxConns  int    // CHORUS_DB_MAX_CONNS; 0 means DefaultDBMaxConns
	Logger      *slog.Logger
}

// ConfigFromEnv reads the CHORUS_* variables of the orgs service.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		DatabaseURL: r.Secret("CHORUS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/chorus?sslmode=disable"),
		RedisURL:    r.URL("CHORUS_REDIS_URL", "redis://127.0.0.1:6379/0"),
		DBMaxConns:  r.Int("CHORUS_DB_MAX_CONNS", DefaultDBMaxConns, pgdb.MinConns),
	}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
// The manifests test reads each Deployment's environment through it.
func Setup(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
	cfg := ConfigFromEnv(env)
	cfg.Logger = log
	return registry.Orgs.ListenFrom(env), func(ctx context.Context) (process.Server, error) { return New(ctx, cfg) }
}

// Service is a running orgs service.
type Service struct {
	pool *pgxpool.Pool
	rdb  *redis.Client
	grpc *grpc.Server
	log  *slog.Logger
}

// New connects, migrates and builds the gRPC server.
func New(ctx context.Context, cfg Config) (*Service, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ropts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("orgs: CHORUS_REDIS_URL: %w", err)
	}
	pool, err := pgdb.Open(ctx, cfg.DatabaseURL, Schema, pgdb.WithMaxConns(cmp.Or(cfg.DBMaxConns, DefaultDBMaxConns)))
	if err != nil {
		return nil, fmt.Errorf("orgs: %w", err)
	}
	if err := pgdb.Migrate(ctx, pool, Schema, migrations.FS); err != nil {
		pool.Close()
		return nil, fmt.Errorf("orgs: %w", err)
	}
	rdb := redis.NewClient(ropts)
	srv := rpcserver.New(log, server.UnscopedMethods...)
	orgsv1.RegisterOrgsServiceServer(srv, server.New(store.New(pool), rdb, log))
	return &Service{pool: pool, rdb: rdb, grpc: srv, log: log}, nil
}

// Serve answers gRPC on lis until ctx is done, then drains in-flight calls.
func (s *Service) Serve(ctx context.Context, lis net.Listener) error {
	if err := rpcserver.Serve(ctx, s.grpc, lis); err != nil {
		return fmt.Errorf("orgs: %w", err)
	}
	return nil
}

// Ready reports whether the service's database answers (the ops /readyz endpoint).
func (s *Service) Ready(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("orgs: database: %w", err)
	}
	return nil
}

// Close releases the database and Redis connections.
func (s *Service) Close() {
	s.grpc.Stop()
	s.pool.Close()
	_ = s.rdb.Close()
}
