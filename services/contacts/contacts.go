// Package contacts is the contacts service: contacts, tags, custom fields, segments, consent
// and textability. This is the public entry used by its own main and by the all-in-one binary.
package contacts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/chorus-sms/chorus/pkg/cursor"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/lookup"
	"github.com/chorus-sms/chorus/services/contacts/internal/server"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
	"github.com/chorus-sms/chorus/services/contacts/migrations"
)

// Schema is the PostgreSQL schema the service owns (its tables, River's and the outbox).
const Schema = "contacts"

// DevCursorSecret is the default of CHORUS_CURSOR_SECRET. It is fine for a laptop and wrong
// anywhere else: whoever knows it can forge list cursors.
const DevCursorSecret = "chorus-dev-cursor-secret"

// stopTimeout bounds how long Close waits for running lookups: the registry's Drain,
// which the pod's termination grace period outlasts.
var stopTimeout = registry.Contacts.Drain

// DefaultDBMaxConns bounds the pool (CHORUS_DB_MAX_CONNS): gRPC calls (audience streams hold
// one for a while), the lookup workers' short writes (they mostly wait on the provider), River's
// own connections and the outbox relay.
const DefaultDBMaxConns = 16

// Config is the contacts process configuration.
type Config struct {
	DatabaseURL    string // CHORUS_DATABASE_URL
	RedisURL       string // CHORUS_REDIS_URL: where the outbox relay publishes contacts events
	CursorSecret   string // CHORUS_CURSOR_SECRET: signs list cursors; every replica must share it
	LookupProvider string // CHORUS_LOOKUP_PROVIDER: "sandbox" (default) or "twilio"
	// Twilio is read from CHORUS_TWILIO_ACCOUNT_SID, CHORUS_TWILIO_AUTH_TOKEN (both required
	// with the twilio provider) and CHORUS_TWILIO_LOOKUP_URL (default the Twilio Lookup host).
	Twilio     lookup.TwilioConfig
	DBMaxConns int // CHORUS_DB_MAX_CONNS; 0 means DefaultDBMaxConns
	Logger     *slog.Logger
}

// ConfigFromEnv reads the CHORUS_* variables of the contacts service.
func ConfigFromEnv(r *envconfig.Reader) Config {
	cfg := Config{
		DatabaseURL:    r.Secret("CHORUS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/chorus?sslmode=disable"),
		RedisURL:       r.URL("CHORUS_REDIS_URL", "redis://127.0.0.1:6379/0"),
		CursorSecret:   r.Secret("CHORUS_CURSOR_SECRET", DevCursorSecret),
		LookupProvider: r.OneOf("CHORUS_LOOKUP_PROVIDER", lookup.ProviderSandbox, lookup.ProviderSandbox, lookup.ProviderTwilio),
		Twilio:         lookup.TwilioConfig{BaseURL: r.URL("CHORUS_TWILIO_LOOKUP_URL", lookup.TwilioDefaultBaseURL)},
		DBMaxConns:     r.Int("CHORUS_DB_MAX_CONNS", DefaultDBMaxConns, pgdb.MinConns),
	}
	if cfg.LookupProvider == lookup.ProviderTwilio {
		cfg.Twilio.AccountSID = r.Secret("CHORUS_TWILIO_ACCOUNT_SID", "")
		cfg.Twilio.AuthToken = r.Secret("CHORUS_TWILIO_AUTH_TOKEN", "")
	}
	return cfg
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
// The manifests test reads each Deployment's environment through it.
func Setup(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
	cfg := ConfigFromEnv(env)
	cfg.Logger = log
	return registry.Contacts.ListenFrom(env), func(ctx context.Context) (process.Server, error) { return New(ctx, cfg) }
}

// Service is a running contacts service.
type Service struct {
	pool  *pgxpool.Pool
	rdb   *redis.Client
	jobs  *lookup.Jobs
	relay *outbox.Relay
	grpc  *grpc.Server
	log   *slog.Logger
}

// New connects, migrates, and builds the gRPC server and the lookup job client.
func New(ctx context.Context, cfg Config) (*Service, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.CursorSecret == "" {
		return nil, errors.New("contacts: CHORUS_CURSOR_SECRET must not be empty")
	}
	if cfg.LookupProvider == lookup.ProviderTwilio {
		if err := envconfig.NotDefault("CHORUS_CURSOR_SECRET", cfg.CursorSecret, DevCursorSecret); err != nil {
			return nil, fmt.Errorf("contacts: %w", err)
		}
	}
	provider, err := lookup.NewProvider(cfg.LookupProvider, cfg.Twilio)
	if err != nil {
		return nil, fmt.Errorf("contacts: %w", err)
	}
	ropts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("contacts: CHORUS_REDIS_URL: %w", err)
	}
	pool, err := pgdb.Open(ctx, cfg.DatabaseURL, Schema, pgdb.WithMaxConns(cmp.Or(cfg.DBMaxConns, DefaultDBMaxConns)))
	if err != nil {
		return nil, fmt.Errorf("contacts: %w", err)
	}
	if err := pgdb.Migrate(ctx, pool, Schema, migrations.FS, migrations.With...); err != nil {
		pool.Close()
		return nil, fmt.Errorf("contacts: %w", err)
	}
	st := store.New(pool)
	jobs, err := lookup.NewJobs(pool, Schema, provider, st, log)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("contacts: %w", err)
	}
	srv := rpcserver.New(log)
	contactsv1.RegisterContactsServiceServer(srv, server.New(st, jobs, cursor.New(cfg.CursorSecret)))
	rdb := redis.NewClient(ropts)
	relay := outbox.NewRelay(pool, rdb, outbox.StreamName(Schema), outbox.WithLogger(log))
	return &Service{pool: pool, rdb: rdb, jobs: jobs, relay: relay, grpc: srv, log: log}, nil
}

// Serve works lookup jobs, publishes outbox events and answers gRPC on lis until ctx is done,
// then drains in-flight calls. Running jobs are left to Close, which lets them finish.
func (s *Service) Serve(ctx context.Context, lis net.Listener) error {
	if err := s.jobs.Start(ctx); err != nil {
		return fmt.Errorf("contacts: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.relay.Run(gctx) })
	g.Go(func() error { return rpcserver.Serve(gctx, s.grpc, lis) })
	if err := g.Wait(); err != nil {
		return fmt.Errorf("contacts: %w", err)
	}
	return nil
}

// Ready reports whether the service's database answers (the ops /readyz endpoint).
func (s *Service) Ready(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("contacts: database: %w", err)
	}
	return nil
}

// Close stops the gRPC server, lets running lookups finish (bounded), and releases the pool.
func (s *Service) Close() {
	s.grpc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := s.jobs.Stop(ctx); err != nil {
		s.log.Warn("contacts: lookup jobs did not stop cleanly", "err", err)
	}
	s.pool.Close()
	_ = s.rdb.Close()
}
