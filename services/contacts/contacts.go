// Package contacts is the contacts service: contacts, tags, custom fields, segments, consent
// and textability. This is the public entry used by its own main and by the all-in-one binary.
package contacts

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/chorus-sms/chorus/pkg/cursor"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
	"github.com/chorus-sms/chorus/pkg/service"
	"github.com/chorus-sms/chorus/pkg/twilio"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/imports"
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

// DefaultDBMaxConns bounds the service's connections (CHORUS_DB_MAX_CONNS), split between
// two pools (see inOrderConns): the main one serves gRPC calls, the lookup workers' short
// writes (they mostly wait on the provider), River's own connections and the outbox relay; the
// in-order one serves the list's pages and the audience's batches.
const DefaultDBMaxConns = 16

// minDBMaxConns is the smallest CHORUS_DB_MAX_CONNS the service starts with: the main pool's
// pgdb.MinConns and one in-order connection.
const minDBMaxConns = pgdb.MinConns + 1

// def is the contacts service: its registry row, its schema, its Redis (where the outbox relay
// publishes contacts events) and its connections.
var def = service.Def{Service: registry.Contacts, Layout: service.Layout{
	Schema: Schema, Migrations: migrations.FS, With: migrations.With, Redis: true, DefaultConns: DefaultDBMaxConns, MinConns: minDBMaxConns,
}}

// inOrderConns is the share of the service's n connections (CHORUS_DB_MAX_CONNS) given to the
// in-order pool (store.OpenInOrder: sessions with sorting off, for the statements whose plan
// must walk an index in order, the list's pages and the audience's batches); the main pool gets
// the rest, so the two together open at most n. A quarter, at least one, leaving the main pool
// at least pgdb.MinConns: a page or a batch holds its connection for one short statement (a
// fraction of a millisecond), while the main pool's connections also carry transactions,
// River's polling and listening, and the relay.
func inOrderConns(n int) int {
	return max(1, min(n/4, n-pgdb.MinConns))
}

// Config is the contacts process configuration.
type Config struct {
	service.Storage        // CHORUS_DATABASE_URL, CHORUS_REDIS_URL, CHORUS_DB_MAX_CONNS
	CursorSecret    string // CHORUS_CURSOR_SECRET: signs list cursors; every replica must share it
	LookupProvider  string // CHORUS_LOOKUP_PROVIDER: "sandbox" (default) or "twilio"
	// LookupRate is CHORUS_LOOKUP_RATE: an import's lookups started a second, the provider's
	// rate limit (default lookup.DefaultPerSecond; 0 means the default).
	LookupRate int
	// Twilio is read from CHORUS_TWILIO_ACCOUNT_SID, CHORUS_TWILIO_AUTH_TOKEN (both required
	// with the twilio provider) and CHORUS_TWILIO_LOOKUP_URL (default the Twilio Lookup host).
	Twilio twilio.LookupConfig
	// ImportChunk is how many lines of an upload of declared length one staging transaction
	// commits (0: store.ImportChunk). Not read from the environment: tests set it small, so
	// that a file of several chunks stays small.
	ImportChunk    int32
	process.Wiring // the logger; contacts calls no other service
}

// ConfigFromEnv reads the CHORUS_* variables of the contacts service.
func ConfigFromEnv(r *envconfig.Reader) Config {
	cfg := Config{
		Storage:        def.StorageFromEnv(r),
		CursorSecret:   r.Secret("CHORUS_CURSOR_SECRET", DevCursorSecret),
		LookupProvider: r.OneOf("CHORUS_LOOKUP_PROVIDER", lookup.ProviderSandbox, lookup.ProviderSandbox, lookup.ProviderTwilio),
		Twilio:         twilio.LookupConfig{BaseURL: r.URL("CHORUS_TWILIO_LOOKUP_URL", twilio.DefaultLookupURL)},
		LookupRate:     r.Int("CHORUS_LOOKUP_RATE", lookup.DefaultPerSecond, 1),
	}
	if cfg.LookupProvider == lookup.ProviderTwilio {
		cfg.Twilio.AccountSID = r.Secret("CHORUS_TWILIO_ACCOUNT_SID", "")
		cfg.Twilio.AuthToken = r.Secret("CHORUS_TWILIO_AUTH_TOKEN", "")
	}
	return cfg
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(def.Service, ConfigFromEnv, New)

// New connects, migrates, and builds the service: it works lookup jobs, publishes outbox events
// and answers gRPC. Its Close lets running lookups finish (bounded).
func New(ctx context.Context, cfg Config) (service.Server, error) {
	if cfg.CursorSecret == "" {
		return service.Server{}, errors.New("contacts: CHORUS_CURSOR_SECRET must not be empty")
	}
	if cfg.LookupProvider == lookup.ProviderTwilio {
		if err := envconfig.NotDefault("CHORUS_CURSOR_SECRET", cfg.CursorSecret, DevCursorSecret); err != nil {
			return service.Server{}, fmt.Errorf("contacts: %w", err)
		}
	}
	provider, err := lookup.NewProvider(cfg.LookupProvider, cfg.Twilio)
	if err != nil {
		return service.Server{}, fmt.Errorf("contacts: %w", err)
	}
	conns := cmp.Or(cfg.DBMaxConns, DefaultDBMaxConns)
	if conns < minDBMaxConns {
		return service.Server{}, fmt.Errorf("contacts: %d database connections: want at least %d", conns, minDBMaxConns)
	}
	inOrder := inOrderConns(conns)
	storage := cfg.Storage
	storage.DBMaxConns = conns - inOrder // the main pool; the in-order one has the rest
	return def.Build(ctx, storage, cfg.Wiring, func(sh *service.Shell) error {
		inOrderPool, err := store.OpenInOrder(ctx, sh.Pool, inOrder)
		if err != nil {
			return err
		}
		sh.OnClose(inOrderPool.Close) // the last closer: after the gRPC server and the jobs stop
		st := store.New(sh.Pool, inOrderPool)
		var batches store.BulkLookupQueue // the client below, which works the import jobs too
		importQueue := imports.Queue(st, &batches, server.RejectReason, sh.Log)
		jobs, err := lookup.NewJobs(sh.Pool, Schema, provider, st, lookup.Bulk{Source: st, PerSecond: cfg.LookupRate}, sh.Log, importQueue...)
		if err != nil {
			return err
		}
		batches = jobs
		sh.Starts("lookup jobs", jobs)
		sh.GRPC = rpcserver.New(sh.Log)
		contactsv1.RegisterContactsServiceServer(sh.GRPC, server.New(st, jobs, imports.Enqueuer{Jobs: jobs}, cursor.New(cfg.CursorSecret), cfg.ImportChunk))
		sh.Run(outbox.NewRelay(sh.Pool, sh.Redis, outbox.StreamName(Schema), outbox.WithLogger(sh.Log)).Run)
		return nil
	})
}
