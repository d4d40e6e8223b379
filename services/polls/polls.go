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
	"github.com/chorus-sms/chorus/pkg/service"
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
	shell     *service.Shell
	orgs      *orgs.Client
	contacts  *contacts.Client
	billing   *billing.Client
	messaging *messaging.Client
	engine    *engine.Runner
	replies   *outbox.Consumer // messaging's events: answers, opt-outs
	people    *outbox.Consumer // contacts' events: consent, deletions
}

// New connects, migrates, and builds the gRPC server, the jobs and the event consumers.
func New(ctx context.Context, cfg Config) (svc *Service, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	sh, err := service.Open(ctx, service.Config{
		Name: "polls", DatabaseURL: cfg.DatabaseURL, Schema: Schema, MaxConns: cmp.Or(cfg.DBMaxConns, DefaultDBMaxConns),
		RedisURL: cfg.RedisURL, Migrations: migrations.FS, With: migrations.With, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			sh.Close()
		}
	}()
	s := &Service{shell: sh}
	if s.orgs, err = orgs.Dial(cfg.OrgsAddr, ServiceName); err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	sh.Closes(s.orgs)
	if s.contacts, err = contacts.Dial(cfg.ContactsAddr, ServiceName); err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	sh.Closes(s.contacts)
	if s.billing, err = billing.Dial(cfg.BillingAddr, ServiceName); err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	sh.Closes(s.billing)
	if s.messaging, err = messaging.Dial(cfg.MessagingAddr, ServiceName); err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	sh.Closes(s.messaging)
	st := store.New(sh.Pool)
	s.engine, err = engine.New(engine.Config{
		Pool: sh.Pool, Schema: Schema, Store: st, Orgs: s.orgs, Contacts: s.contacts, Billing: s.billing, Messaging: s.messaging,
		Logger: log, Hour: cfg.Hour, SweepEvery: cfg.SweepEvery,
	})
	if err != nil {
		return nil, fmt.Errorf("polls: %w", err)
	}
	sh.OnStop("jobs", stopTimeout, s.engine.Stop)
	sh.GRPC = rpcserver.New(log)
	pollsv1.RegisterPollsServiceServer(sh.GRPC, server.New(server.Config{
		Store: st, Contacts: s.contacts, Messaging: s.messaging, Jobs: s.engine,
	}))
	member := outbox.MemberName()
	s.replies = outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName("messaging"), ServiceName, member, s.engine.MessagingHandler(), append(engine.MessagingEvents(), outbox.WithLogger(log))...)
	s.people = outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName("contacts"), ServiceName, member, s.engine.ContactsHandler(), engine.ContactsEvents(), outbox.WithLogger(log))
	return s, nil
}

// Serve runs the jobs, consumes the events and answers gRPC on lis until ctx is done.
func (s *Service) Serve(ctx context.Context, lis net.Listener) error {
	if err := s.engine.Start(ctx); err != nil {
		return fmt.Errorf("polls: %w", err)
	}
	return s.shell.Serve(ctx, lis, s.replies.Run, s.people.Run)
}

// Ready reports whether the service's database answers (the ops /readyz endpoint).
func (s *Service) Ready(ctx context.Context) error { return s.shell.Ready(ctx) }

// Close stops the gRPC server, lets running jobs finish (bounded), and releases connections.
func (s *Service) Close() { s.shell.Close() }
