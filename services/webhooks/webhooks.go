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

// ServiceName is who webhooks acts as on its calls to contacts and the consumer group of the
// event streams it reads.
const ServiceName = "webhooks"

// DefaultDBMaxConns bounds the pool (CHORUS_DB_MAX_CONNS): gRPC, the consumers, and the
// attempts, each of which uses a connection only to read and to record.
const DefaultDBMaxConns = 20

// layout is the webhooks schema, its Redis (the producers' event streams) and its pool.
var layout = service.Layout{Schema: Schema, Migrations: migrations.FS, With: migrations.With, Redis: true, DefaultConns: DefaultDBMaxConns}

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
		Storage:       service.StorageFromEnv(r, layout),
		AllowLoopback: r.Bool("CHORUS_WEBHOOKS_ALLOW_LOOPBACK", false),
		DisableAfter:  r.Duration("CHORUS_WEBHOOKS_DISABLE_AFTER", deliver.DefaultDisableAfter),
		Workers:       r.Int("CHORUS_WEBHOOKS_WORKERS", deliver.DefaultWorkers, 1),
		PerEndpoint:   r.Int("CHORUS_WEBHOOKS_PER_ENDPOINT", deliver.DefaultPerEndpoint, 1),
		Schedule:      r.Durations("CHORUS_WEBHOOKS_RETRY_SCHEDULE", deliver.DefaultSchedule),
		Retention:     r.Duration("CHORUS_WEBHOOKS_RETENTION", deliver.DefaultRetention),
	}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(registry.Webhooks, ConfigFromEnv, New)

// Service is a running webhooks service: it consumes messaging's, contacts', campaigns' and
// polls' events into deliveries, works their attempts, and answers gRPC.
type Service struct{ service.Server }

// New connects, migrates, and builds the gRPC server, the consumers and the attempts' runner.
func New(ctx context.Context, cfg Config) (*Service, error) {
	srv, err := service.Build(ctx, service.Config{Service: registry.Webhooks, Wiring: cfg.Wiring, Storage: cfg.Storage, Layout: layout}, func(sh *service.Shell) error {
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
			sh.Run(outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName(src.Stream), ServiceName, member, src.Handler,
				outbox.WithTypes(src.Types...), outbox.WithBatchHandler(src.Batch), outbox.WithLogger(sh.Log)).Run)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Service{srv}, nil
}
