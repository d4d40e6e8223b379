// Package campaigns is the campaigns service: drafts, submission and scheduling, the audience
// fan-out (contacts' audience, a billing hold, messaging's bulk queue), and the counters and
// auto-replies kept from messaging's events. This is the public entry used by its own main and by the all-in-one
// binary.
package campaigns

import (
	"context"
	"time"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/outbox"
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

// def is the campaigns service: its registry row, its schema, its Redis (messaging's event
// stream, campaigns' own) and its pool (CHORUS_DB_MAX_CONNS, default 12: gRPC calls, River's
// fan-out jobs, its LISTEN connection and leader election, and the event consumer).
var def = service.Def{Service: registry.Campaigns, Layout: service.Layout{
	Schema: Schema, Migrations: migrations.FS, With: migrations.With, Redis: true, DefaultConns: 12,
}}

// Config is the campaigns process configuration.
type Config struct {
	service.Storage // CHORUS_DATABASE_URL, CHORUS_REDIS_URL, CHORUS_DB_MAX_CONNS
	// AbWaitUnit is how long one of an A/B test's abTestWaitMinutes lasts (CHORUS_AB_WAIT_UNIT,
	// default a minute; shorter only for demonstrations and tests).
	AbWaitUnit time.Duration
	// Wiring: orgs, contacts, billing and messaging (registry.Campaigns.Needs), the logger.
	process.Wiring
}

// ConfigFromEnv reads the service's own CHORUS_* variables; Setup adds its peers'.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		Storage:    def.StorageFromEnv(r),
		AbWaitUnit: r.Duration("CHORUS_AB_WAIT_UNIT", time.Minute),
	}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(def.Service, ConfigFromEnv, New)

// New connects, migrates, and builds the service: it runs the fan-out jobs, consumes
// messaging's events, relays campaign.changed events onto chorus.campaigns.events and answers
// gRPC. Its Close lets a running fan-out batch finish (bounded).
func New(ctx context.Context, cfg Config) (service.Server, error) {
	return def.Build(ctx, cfg.Storage, cfg.Wiring, func(sh *service.Shell) error {
		st := store.New(sh.Pool)
		jobs, err := fanout.New(fanout.Config{
			Pool: sh.Pool, Schema: Schema, Store: st, Peers: sh.Peers, Logger: sh.Log, AbWaitUnit: cfg.AbWaitUnit,
		})
		if err != nil {
			return err
		}
		sh.Starts("fan-out", jobs)
		sh.GRPC = rpcserver.New(sh.Log)
		campaignsv1.RegisterCampaignsServiceServer(sh.GRPC, server.New(server.Config{
			Store: st, Orgs: sh.Peers.Orgs, Contacts: sh.Peers.Contacts, Messaging: sh.Peers.Messaging, Jobs: jobs,
		}))
		sh.Run(outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName("messaging"), sh.Name, outbox.MemberName(), fanout.EventHandler(st, jobs), fanout.EventTypes(), fanout.IdempotentTypes(),
			outbox.WithBatchHandler(fanout.EventBatch(st, jobs)), outbox.WithLogger(sh.Log)).Run,
			outbox.NewRelay(sh.Pool, sh.Redis, outbox.StreamName(Schema), outbox.WithLogger(sh.Log)).Run)
		return nil
	})
}
