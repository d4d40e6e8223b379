// Package analytics is the analytics service: read-only overview, trends, top campaigns, best
// send times and the campaigns export of an organization, answered from rollups it keeps from
// messaging's and campaigns' events. This is the public entry used by its own main and by the
// all-in-one binary.
package analytics

import (
	"context"
	"strconv"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
	"github.com/chorus-sms/chorus/pkg/service"
	analyticsv1 "github.com/chorus-sms/chorus/proto/gen/go/analytics/v1"
	"github.com/chorus-sms/chorus/services/analytics/internal/ingest"
	"github.com/chorus-sms/chorus/services/analytics/internal/orgzone"
	"github.com/chorus-sms/chorus/services/analytics/internal/server"
	"github.com/chorus-sms/chorus/services/analytics/internal/store"
	"github.com/chorus-sms/chorus/services/analytics/migrations"
)

// Schema is the PostgreSQL schema the service owns.
const Schema = "analytics"

// MessagingMembers is how many members of the consumer group read messaging's stream in one
// process: an event's work is mostly waiting on PostgreSQL round trips, so members applying
// batches side by side multiply the ingest rate (the rollups are appended to, not updated, so
// they do not queue on each other; two events of one message lock its fact in turn).
const MessagingMembers = 4

// MessagingBatchSize is how many of messaging's events a member reads and applies at once
// (ingest.MessagingBatch: a few statements whatever the number).
const MessagingBatchSize = 500

// def is the analytics service: its registry row, its schema, its Redis (messaging's and
// campaigns' event streams) and its pool (CHORUS_DB_MAX_CONNS, default 12: gRPC reads, the
// event consumers, one transaction each, and the folder).
var def = service.Def{Service: registry.Analytics, Layout: service.Layout{
	Schema: Schema, Migrations: migrations.FS, With: migrations.With, Redis: true, DefaultConns: 12,
}}

// Config is the analytics process configuration.
type Config struct {
	service.Storage // CHORUS_DATABASE_URL, CHORUS_REDIS_URL, CHORUS_DB_MAX_CONNS
	// Wiring: orgs (organizations' zones) and contacts (contact totals), the logger.
	process.Wiring
}

// ConfigFromEnv reads the service's own CHORUS_* variables; Setup adds its peers'.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{Storage: def.StorageFromEnv(r)}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(def.Service, ConfigFromEnv, New)

// New connects, migrates, and builds the service: it consumes messaging's events (messages,
// inbound messages, clicks: MessagingMembers of the group) and campaigns' (snapshots), folds
// their counts into the rollups, and answers gRPC.
func New(ctx context.Context, cfg Config) (service.Server, error) {
	return def.Build(ctx, cfg.Storage, cfg.Wiring, func(sh *service.Shell) error {
		log := sh.Log
		zones := orgzone.New(sh.Peers.Orgs)
		sh.GRPC = rpcserver.New(log)
		analyticsv1.RegisterAnalyticsServiceServer(sh.GRPC, server.New(server.Config{Store: store.New(sh.Pool), Zones: zones, Contacts: sh.Peers.Contacts}))
		in := ingest.New(zones)
		member := outbox.MemberName()
		for i := range MessagingMembers {
			sh.Run(outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName("messaging"), sh.Name,
				member+"-"+strconv.Itoa(i), in.MessagingHandler(), outbox.WithBatchHandler(in.MessagingBatch()),
				ingest.MessagingIdempotent(), outbox.WithBatchSize(MessagingBatchSize), outbox.WithLogger(log)).Run)
		}
		sh.Run(outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName("campaigns"), sh.Name, member, in.CampaignsHandler(), outbox.WithLogger(log)).Run,
			func(ctx context.Context) error {
				ingest.FoldLoop(ctx, sh.Pool, log)
				return nil
			})
		return nil
	})
}
