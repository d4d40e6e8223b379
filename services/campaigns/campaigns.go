// Package campaigns is the campaigns service: drafts, submission and scheduling, the audience
// fan-out (contacts' audience, a billing hold, messaging's bulk queue), and the counters and
// auto-replies kept from messaging's events. This is the public entry used by its own main and by the all-in-one
// binary.
package campaigns

import (
	"cmp"
	"context"
	"fmt"
	"time"

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
	DatabaseURL string // CHORUS_DATABASE_URL
	RedisURL    string // CHORUS_REDIS_URL: messaging's event stream
	DBMaxConns  int    // CHORUS_DB_MAX_CONNS; 0 means DefaultDBMaxConns
	// AbWaitUnit is how long one of an A/B test's abTestWaitMinutes lasts (CHORUS_AB_WAIT_UNIT,
	// default a minute; shorter only for demonstrations and tests).
	AbWaitUnit time.Duration
	// Wiring: orgs, contacts, billing and messaging (registry.Campaigns.Needs), the logger.
	process.Wiring
}

// ConfigFromEnv reads the service's own CHORUS_* variables; Setup adds its peers'.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		DatabaseURL: r.Secret("CHORUS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/chorus?sslmode=disable"),
		RedisURL:    r.URL("CHORUS_REDIS_URL", "redis://127.0.0.1:6379/0"),
		DBMaxConns:  r.Int("CHORUS_DB_MAX_CONNS", DefaultDBMaxConns, pgdb.MinConns),
		AbWaitUnit:  r.Duration("CHORUS_AB_WAIT_UNIT", time.Minute),
	}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(registry.Campaigns, ConfigFromEnv, New)

// Service is a running campaigns service: it runs the fan-out jobs, consumes messaging's
// events, relays campaign.changed events onto chorus.campaigns.events and answers gRPC. Close
// lets a running fan-out batch finish (bounded).
type Service struct{ service.Server }

// New connects, migrates, and builds the gRPC server, the fan-out jobs and the event consumer.
func New(ctx context.Context, cfg Config) (_ *Service, err error) {
	sh, err := service.Open(ctx, service.Config{
		Service: registry.Campaigns, Wiring: cfg.Wiring, DatabaseURL: cfg.DatabaseURL, Schema: Schema,
		MaxConns: cmp.Or(cfg.DBMaxConns, DefaultDBMaxConns), RedisURL: cfg.RedisURL, Migrations: migrations.FS, With: migrations.With,
	})
	if err != nil {
		return nil, err
	}
	defer sh.CloseOnError(&err)
	log, peers := sh.Log, sh.Peers
	st := store.New(sh.Pool)
	jobs, err := fanout.New(fanout.Config{
		Pool: sh.Pool, Schema: Schema, Store: st, Orgs: peers.Orgs, Contacts: peers.Contacts, Billing: peers.Billing, Messaging: peers.Messaging,
		Logger: log, AbWaitUnit: cfg.AbWaitUnit,
	})
	if err != nil {
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	sh.OnStart(jobs.Start)
	sh.OnStop("fan-out", stopTimeout, jobs.Stop)
	sh.GRPC = rpcserver.New(log)
	campaignsv1.RegisterCampaignsServiceServer(sh.GRPC, server.New(server.Config{
		Store: st, Orgs: peers.Orgs, Contacts: peers.Contacts, Messaging: peers.Messaging, Jobs: jobs,
	}))
	sh.Run(outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName("messaging"), ServiceName, outbox.MemberName(), fanout.EventHandler(st, jobs), fanout.EventTypes(), fanout.IdempotentTypes(),
		outbox.WithBatchHandler(fanout.EventBatch(st, jobs)), outbox.WithLogger(log)).Run,
		outbox.NewRelay(sh.Pool, sh.Redis, outbox.StreamName(Schema), outbox.WithLogger(log)).Run)
	return &Service{sh.Server()}, nil
}
