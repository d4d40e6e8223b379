// Package campaigns is the campaigns service: drafts, submission and scheduling, the audience
// fan-out (contacts' audience, a billing hold, messaging's bulk queue), and the counters and
// auto-replies kept from messaging's events. This is the public entry used by its own main and by the all-in-one
// binary.
package campaigns

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
	campaignsv1 "github.com/chorus-sms/chorus/proto/gen/go/campaigns/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/fanout"
	"github.com/chorus-sms/chorus/services/campaigns/internal/server"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
	"github.com/chorus-sms/chorus/services/campaigns/migrations"
)

// Schema is the PostgreSQL schema the service owns.
const Schema = "campaigns"

// ServiceName is who campaigns acts as on its calls to other services ("service:campaigns").
const ServiceName = "campaigns"

// DefaultDBMaxConns bounds the pool (CHORUS_DB_MAX_CONNS): gRPC calls, River (fan-out jobs,
// its LISTEN connection, leader election) and the event consumer.
const DefaultDBMaxConns = 12

// stopTimeout bounds how long Close waits for running work: the registry's Drain, which the
// pod's termination grace period outlasts.
var stopTimeout = registry.Campaigns.Drain

// Config is the campaigns process configuration.
type Config struct {
	DatabaseURL   string // CHORUS_DATABASE_URL
	RedisURL      string // CHORUS_REDIS_URL: messaging's event stream
	OrgsAddr      string // CHORUS_ORGS_ADDR
	ContactsAddr  string // CHORUS_CONTACTS_ADDR
	BillingAddr   string // CHORUS_BILLING_ADDR
	MessagingAddr string // CHORUS_MESSAGING_ADDR
	DBMaxConns    int    // CHORUS_DB_MAX_CONNS; 0 means DefaultDBMaxConns
	// AbWaitUnit is how long one of an A/B test's abTestWaitMinutes lasts (CHORUS_AB_WAIT_UNIT,
	// default a minute; shorter only for demonstrations and tests).
	AbWaitUnit time.Duration
	Logger     *slog.Logger
}

// ConfigFromEnv reads the CHORUS_* variables of the campaigns service.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		DatabaseURL:   r.Secret("CHORUS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/chorus?sslmode=disable"),
		RedisURL:      r.URL("CHORUS_REDIS_URL", "redis://127.0.0.1:6379/0"),
		OrgsAddr:      registry.Orgs.AddrFrom(r),
		ContactsAddr:  registry.Contacts.AddrFrom(r),
		BillingAddr:   registry.Billing.AddrFrom(r),
		MessagingAddr: registry.Messaging.AddrFrom(r),
		DBMaxConns:    r.Int("CHORUS_DB_MAX_CONNS", DefaultDBMaxConns, pgdb.MinConns),
		AbWaitUnit:    r.Duration("CHORUS_AB_WAIT_UNIT", time.Minute),
	}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
// The manifests test reads each Deployment's environment through it.
func Setup(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
	cfg := ConfigFromEnv(env)
	cfg.Logger = log
	return registry.Campaigns.ListenFrom(env), func(ctx context.Context) (process.Server, error) { return New(ctx, cfg) }
}

// Service is a running campaigns service.
type Service struct {
	shell     *service.Shell
	orgs      *orgs.Client
	contacts  *contacts.Client
	billing   *billing.Client
	messaging *messaging.Client
	fanout    *fanout.Runner
	events    *outbox.Consumer
	relay     *outbox.Relay // campaign.changed events onto chorus.campaigns.events
}

// New connects, migrates, and builds the gRPC server, the fan-out jobs and the event consumer.
func New(ctx context.Context, cfg Config) (svc *Service, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	sh, err := service.Open(ctx, service.Config{
		Name: "campaigns", DatabaseURL: cfg.DatabaseURL, Schema: Schema, MaxConns: cmp.Or(cfg.DBMaxConns, DefaultDBMaxConns),
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
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	sh.Closes(s.orgs)
	if s.contacts, err = contacts.Dial(cfg.ContactsAddr, ServiceName); err != nil {
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	sh.Closes(s.contacts)
	if s.billing, err = billing.Dial(cfg.BillingAddr, ServiceName); err != nil {
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	sh.Closes(s.billing)
	if s.messaging, err = messaging.Dial(cfg.MessagingAddr, ServiceName); err != nil {
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	sh.Closes(s.messaging)
	st := store.New(sh.Pool)
	s.fanout, err = fanout.New(fanout.Config{
		Pool: sh.Pool, Schema: Schema, Store: st, Orgs: s.orgs, Contacts: s.contacts, Billing: s.billing, Messaging: s.messaging, Logger: log,
		AbWaitUnit: cfg.AbWaitUnit,
	})
	if err != nil {
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	sh.OnStop("fan-out", stopTimeout, s.fanout.Stop)
	sh.GRPC = rpcserver.New(log)
	campaignsv1.RegisterCampaignsServiceServer(sh.GRPC, server.New(server.Config{
		Store: st, Orgs: s.orgs, Contacts: s.contacts, Messaging: s.messaging, Jobs: s.fanout,
	}))
	s.events = outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName("messaging"), ServiceName, outbox.MemberName(), fanout.EventHandler(st, s.fanout), fanout.EventTypes(),
		outbox.WithBatchHandler(fanout.EventBatch(st, s.fanout)), outbox.WithLogger(log))
	s.relay = outbox.NewRelay(sh.Pool, sh.Redis, outbox.StreamName(Schema), outbox.WithLogger(log))
	return s, nil
}

// Serve runs the fan-out jobs, consumes messaging's events and answers gRPC on lis until ctx
// is done.
func (s *Service) Serve(ctx context.Context, lis net.Listener) error {
	if err := s.fanout.Start(ctx); err != nil {
		return fmt.Errorf("campaigns: %w", err)
	}
	return s.shell.Serve(ctx, lis, s.events.Run, s.relay.Run)
}

// Ready reports whether the service's database answers (the ops /readyz endpoint).
func (s *Service) Ready(ctx context.Context) error { return s.shell.Ready(ctx) }

// Close stops the gRPC server, lets a running fan-out batch finish (bounded), and releases
// connections.
func (s *Service) Close() { s.shell.Close() }
