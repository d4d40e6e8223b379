// Package polls is the polls service: polls and their questions, the start (contacts'
// audience, a billing hold, the intro and first question through messaging), the answers read
// from messaging's inbound events, branching, re-asks, timeouts and completion. This is the
// public entry used by its own main and by the all-in-one binary.
package polls

import (
	"context"
	"time"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/outbox"
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

// def is the polls service: its registry row, its schema, its Redis (messaging's and
// contacts' event streams) and its pool (CHORUS_DB_MAX_CONNS, default 16: gRPC calls, River's
// start and step jobs, its LISTEN connection and leader election, and the two event
// consumers).
var def = service.Def{Service: registry.Polls, Layout: service.Layout{
	Schema: Schema, Migrations: migrations.FS, With: migrations.With, Redis: true, DefaultConns: 16,
}}

// Config is the polls process configuration.
type Config struct {
	service.Storage // CHORUS_DATABASE_URL, CHORUS_REDIS_URL, CHORUS_DB_MAX_CONNS
	// Hour is how long one of a poll's participantTimeoutHours lasts (CHORUS_POLL_HOUR, default
	// an hour; shorter only for demonstrations and tests).
	Hour time.Duration
	// SweepEvery is how often silent participants are terminated (CHORUS_POLL_SWEEP, default a
	// minute).
	SweepEvery time.Duration
	// Wiring: orgs, contacts, billing and messaging (registry.Polls.Needs), the logger.
	process.Wiring
}

// ConfigFromEnv reads the service's own CHORUS_* variables; Setup adds its peers'.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		Storage:    def.StorageFromEnv(r),
		Hour:       r.Duration("CHORUS_POLL_HOUR", time.Hour),
		SweepEvery: r.Duration("CHORUS_POLL_SWEEP", time.Minute),
	}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(def.Service, ConfigFromEnv, New)

// New connects, migrates, and builds the service: it runs the start and step jobs, consumes
// messaging's events (answers, opt-outs) and contacts' (consent, deletions), relays its own
// (poll.response_recorded, poll.completed) onto chorus.polls.events, and answers gRPC. Its
// Close lets running jobs finish (bounded).
func New(ctx context.Context, cfg Config) (service.Server, error) {
	return def.Build(ctx, cfg.Storage, cfg.Wiring, func(sh *service.Shell) error {
		st := store.New(sh.Pool)
		jobs, err := engine.New(engine.Config{
			Pool: sh.Pool, Schema: Schema, Store: st, Peers: sh.Peers, Logger: sh.Log, Hour: cfg.Hour, SweepEvery: cfg.SweepEvery,
		})
		if err != nil {
			return err
		}
		sh.Starts("jobs", jobs)
		sh.GRPC = rpcserver.New(sh.Log)
		pollsv1.RegisterPollsServiceServer(sh.GRPC, server.New(server.Config{Store: st, Contacts: sh.Peers.Contacts, Messaging: sh.Peers.Messaging, Jobs: jobs}))
		member := outbox.MemberName()
		sh.Run(outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName("messaging"), sh.Name, member, jobs.MessagingHandler(), append(engine.MessagingEvents(), outbox.WithLogger(sh.Log))...).Run,
			outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName("contacts"), sh.Name, member, jobs.ContactsHandler(), engine.ContactsEvents(), outbox.WithLogger(sh.Log)).Run,
			outbox.NewRelay(sh.Pool, sh.Redis, outbox.StreamName(Schema), outbox.WithLogger(sh.Log)).Run)
		return nil
	})
}
