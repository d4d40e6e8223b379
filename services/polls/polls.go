// Package polls is the polls service: polls and their questions, the start (contacts'
// audience, a billing hold, the intro and first question through messaging), the answers read
// from messaging's inbound events, branching, re-asks, timeouts and completion. This is the
// public entry used by its own main and by the all-in-one binary.
package polls

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/chorus-sms/chorus/pkg/clients/billing"
	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/clients/messaging"
	"github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
	pollsv1 "github.com/chorus-sms/chorus/proto/gen/go/polls/v1"
	"github.com/chorus-sms/chorus/services/polls/internal/engine"
	"github.com/chorus-sms/chorus/services/polls/internal/server"
	"github.com/chorus-sms/chorus/services/polls/internal/store"
	"github.com/chorus-sms/chorus/services/polls/migrations"
)

// Schema is the PostgreSQL schema the service owns.
const Schema = "polls"

// ServiceName is who polls acts as on its calls to other services ("service:polls") and the
// consumer group of the event streams it reads.
const ServiceName = "polls"

// DefaultDBMaxConns bounds the pool (CHORUS_DB_MAX_CONNS): gRPC calls, River (start and step
// jobs, its LISTEN connection, leader election) and the two event consumers.
const DefaultDBMaxConns = 16

// stopTimeout bounds how long Close waits for running work: the registry's Drain, which the
// pod's termination grace period outlasts.
var stopTimeout = registry.Polls.Drain

// Config is the polls process configuration.
type Config struct {
	DatabaseURL   string // CHORUS_DATABASE_URL
	RedisURL      string // CHORUS_REDIS_URL: messaging's and contacts' event streams
	OrgsAddr      string // CHORUS_ORGS_ADDR
	ContactsAddr  string // CHORUS_CONTACTS_ADDR
	BillingAddr   string // CHORUS_BILLING_ADDR
	MessagingAddr string // CHORUS_MESSAGING_ADDR
	DBMaxConns    int    // CHORUS_DB_MAX_CONNS; 0 means DefaultDBMaxConns
	// Hour is how long one of a poll's participantTimeoutHours lasts (CHORUS_POLL_HOUR, default
	// an hour; shorter only for demonstrations and tests).
	Hour time.Duration
	// SweepEvery is how often silent participants are terminated (CHORUS_POLL_SWEEP, default a
	// minute).
	SweepEvery time.Duration
	Logger     *slog.Logger
}

// ConfigFromEnv reads the CHORUS_* variables of the polls service.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		DatabaseURL:   r.Secret("CHORUS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/chorus?sslmode=disable"),
		RedisURL:      r.URL("CHORUS_REDIS_URL", "redis://127.0.0.1:6379/0"),
		OrgsAddr:      registry.Orgs.AddrFrom(r),
		ContactsAddr:  registry.Contacts.AddrFrom(r),
		BillingAddr:   registry.Billing.AddrFrom(r),
		MessagingAddr: registry.Messaging.AddrFrom(r),
		DBMaxConns:    r.Int("CHORUS_DB_MAX_CONNS", DefaultDBMaxConns, pgdb.MinConns),
		Hour:          r.Duration("CHORUS_POLL_HOUR", time.Hour),
		SweepEvery:    r.Duration("CHORUS_POLL_SWEEP", time.Minute),
	}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
// The manifests test reads each Deployment's environment through it.
func Setup(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
	cfg := ConfigFromEnv(env)
	cfg.Logger = log
	return registry.Polls.ListenFrom(env), func(ctx context.Context) (process.Server, error) { return New(ctx, cfg) }
}

// Service is a running polls service.
type Service struct {
	pool      *pgxpool.Pool
	rdb       *redis.Client
	orgs      *orgs.Client
	contacts  *contacts.Client
	billing   *billing.Client
	messaging *messaging.Client
	engine    *engine.Runner
	replies   *outbox.Consumer // messaging's events: answers, opt-outs
	people    *outbox.Consumer // contacts' events: consent, deletions
	grpc      *grpc.Server
	log       *slog.Logger
}

// New connects, migrates, and builds the gRPC server, the jobs and the event consumers.
func New(ctx context.Context, cfg Config) (svc *Service, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ropts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("polls: CHORUS_REDIS_URL: %w", err)
	}
	pool, err := pgdb.Open(ctx, cfg.DatabaseURL, Schema, pgdb.WithMaxConns(cmp.Or(cfg.DBMaxConns, DefaultDBMaxConns)))
	if err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	s := &Service{pool: pool, rdb: redis.NewClient(ropts), log: log}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := pgdb.Migrate(ctx, pool, Schema, migrations.FS, migrations.With...); err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	if s.orgs, err = orgs.Dial(cfg.OrgsAddr, ServiceName); err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	if s.contacts, err = contacts.Dial(cfg.ContactsAddr, ServiceName); err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	if s.billing, err = billing.Dial(cfg.BillingAddr, ServiceName); err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	if s.messaging, err = messaging.Dial(cfg.MessagingAddr, ServiceName); err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	st := store.New(pool)
	s.engine, err = engine.New(engine.Config{
		Pool: pool, Schema: Schema, Store: st, Orgs: s.orgs, Contacts: s.contacts, Billing: s.billing, Messaging: s.messaging,
		Logger: log, Hour: cfg.Hour, SweepEvery: cfg.SweepEvery,
	})
	if err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	s.grpc = rpcserver.New(log)
	pollsv1.RegisterPollsServiceServer(s.grpc, server.New(server.Config{
		Store: st, Orgs: s.orgs, Contacts: s.contacts, Messaging: s.messaging, Jobs: s.engine,
	}))
	member := outbox.MemberName()
	s.replies = outbox.NewConsumer(pool, s.rdb, outbox.StreamName("messaging"), ServiceName, member, s.engine.MessagingHandler(), append(engine.MessagingEvents(), outbox.WithLogger(log))...)
	s.people = outbox.NewConsumer(pool, s.rdb, outbox.StreamName("contacts"), ServiceName, member, s.engine.ContactsHandler(), engine.ContactsEvents(), outbox.WithLogger(log))
	return s, nil
}

// Serve runs the jobs, consumes the events and answers gRPC on lis until ctx is done.
func (s *Service) Serve(ctx context.Context, lis net.Listener) error {
	if err := s.engine.Start(ctx); err != nil {
		return fmt.Errorf("polls: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.replies.Run(gctx) })
	g.Go(func() error { return s.people.Run(gctx) })
	g.Go(func() error { return rpcserver.Serve(gctx, s.grpc, lis) })
	if err := g.Wait(); err != nil {
		return fmt.Errorf("polls: %w", err)
	}
	return nil
}

// Ready reports whether the service's database answers (the ops /readyz endpoint).
func (s *Service) Ready(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("polls: database: %w", err)
	}
	return nil
}

// Close stops the gRPC server, lets running jobs finish (bounded), and releases connections.
func (s *Service) Close() {
	if s.grpc != nil {
		s.grpc.Stop()
	}
	if s.engine != nil {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		if err := s.engine.Stop(ctx); err != nil {
			s.log.Warn("polls: jobs did not stop cleanly", "err", err)
		}
	}
	if s.orgs != nil {
		_ = s.orgs.Close()
	}
	if s.contacts != nil {
		_ = s.contacts.Close()
	}
	if s.billing != nil {
		_ = s.billing.Close()
	}
	if s.messaging != nil {
		_ = s.messaging.Close()
	}
	s.pool.Close()
	_ = s.rdb.Close()
}
