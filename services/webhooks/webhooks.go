// Package webhooks is the outbound webhooks service: an organization's endpoints, and the
// delivery to them of the events other services publish (messages received and their status
// reports, opt-outs and opt-ins, completed campaigns, poll answers and completed polls, finished
// contact imports), signed per Standard Webhooks and retried with backoff for over a day. This is the public entry used by its own main and by the all-in-one binary.
package webhooks

import (
	"context"
	"time"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
	"github.com/chorus-sms/chorus/pkg/service"
	webhooksv1 "github.com/chorus-sms/chorus/proto/gen/go/webhooks/v1"
	"github.com/chorus-sms/chorus/services/webhooks/internal/deliver"
	"github.com/chorus-sms/chorus/services/webhooks/internal/egress"
	"github.com/chorus-sms/chorus/services/webhooks/internal/intake"
	"github.com/chorus-sms/chorus/services/webhooks/internal/server"
	"github.com/chorus-sms/chorus/services/webhooks/internal/store"
	"github.com/chorus-sms/chorus/services/webhooks/migrations"
)

// Schema is the PostgreSQL schema the service owns.
const Schema = "webhooks"

// def is the webhooks service: its registry row, its schema, its Redis (the producers' event
// streams) and its pool (CHORUS_DB_MAX_CONNS, default 20: gRPC, the consumers, and the
// attempts, each of which uses a connection only to read and to record).
var def = service.Def{Service: registry.Webhooks, Layout: service.Layout{
	Schema: Schema, Migrations: migrations.FS, With: migrations.With, Redis: true, DefaultConns: 20,
}}

// Config is the webhooks process configuration.
type Config struct {
	service.Storage // CHORUS_DATABASE_URL, CHORUS_REDIS_URL, CHORUS_DB_MAX_CONNS
	// AllowLoopback lets endpoints be on loopback (CHORUS_WEBHOOKS_ALLOW_LOOPBACK): for the
	// local stack's receivers only; private, link-local and metadata addresses stay refused.
	AllowLoopback bool
	// Schedule is the wait before each retry (CHORUS_WEBHOOKS_RETRY_SCHEDULE); nil is
	// deliver.DefaultSchedule.
	Schedule []time.Duration
	// DisableAfter is how long an endpoint fails every attempt before it is disabled
	// (CHORUS_WEBHOOKS_DISABLE_AFTER).
	DisableAfter time.Duration
	// Workers is how many attempts run at once (CHORUS_WEBHOOKS_WORKERS), PerEndpoint how
	// many of them one endpoint may have (CHORUS_WEBHOOKS_PER_ENDPOINT).
	Workers, PerEndpoint int
	// Retention is how long a delivery that is no longer pending is kept with its attempts
	// (CHORUS_WEBHOOKS_RETENTION); a pending one is never deleted.
	Retention time.Duration
	// Wiring: contacts (the contact of an opt-out or opt-in), messaging (a reported message),
	// campaigns and polls (a completed one), the logger.
	process.Wiring
}

// ConfigFromEnv reads the service's own CHORUS_* variables; Setup adds its peers'.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		Storage:       def.StorageFromEnv(r),
		AllowLoopback: r.Bool("CHORUS_WEBHOOKS_ALLOW_LOOPBACK", false),
		DisableAfter:  r.Duration("CHORUS_WEBHOOKS_DISABLE_AFTER", deliver.DefaultDisableAfter),
		Workers:       r.Int("CHORUS_WEBHOOKS_WORKERS", deliver.DefaultWorkers, 1),
		PerEndpoint:   r.Int("CHORUS_WEBHOOKS_PER_ENDPOINT", deliver.DefaultPerEndpoint, 1),
		Schedule:      r.Durations("CHORUS_WEBHOOKS_RETRY_SCHEDULE", deliver.DefaultSchedule),
		Retention:     r.Duration("CHORUS_WEBHOOKS_RETENTION", deliver.DefaultRetention),
	}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(def.Service, ConfigFromEnv, New)

// New connects, migrates, and builds the service: it consumes messaging's, contacts',
// campaigns' and polls' events into deliveries, works their attempts, and answers gRPC.
func New(ctx context.Context, cfg Config) (service.Server, error) {
	return def.Build(ctx, cfg.Storage, cfg.Wiring, func(sh *service.Shell) error {
		st := store.New(sh.Pool)
		policy := egress.Policy{AllowLoopback: cfg.AllowLoopback}
		runner, err := deliver.New(deliver.Config{
			Pool: sh.Pool, Schema: Schema, Store: st, Policy: policy, Logger: sh.Log,
			Schedule: cfg.Schedule, DisableAfter: cfg.DisableAfter, Workers: cfg.Workers, PerEndpoint: cfg.PerEndpoint,
			Retention: cfg.Retention,
		})
		if err != nil {
			return err
		}
		sh.Starts("deliveries", runner)
		sh.GRPC = rpcserver.New(sh.Log)
		webhooksv1.RegisterWebhooksServiceServer(sh.GRPC, server.New(server.Config{Store: st, Retrier: runner, Policy: policy, Types: intake.Types}))
		member := outbox.MemberName()
		for _, src := range intake.New(runner, intake.Peers{
			Contacts: sh.Peers.Contacts, Messaging: sh.Peers.Messaging, Campaigns: sh.Peers.Campaigns, Polls: sh.Peers.Polls,
		}).Sources() {
			sh.Run(outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName(src.Stream), sh.Name, member, src.Handler,
				outbox.WithTypes(src.Types...), outbox.WithBatchHandler(src.Batch), outbox.WithLogger(sh.Log)).Run)
		}
		return nil
	})
}
