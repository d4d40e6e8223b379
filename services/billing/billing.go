// Package billing is the billing service: accounts (pricing model, billing status,
// subscription, portal URLs), the credit ledger with its holds, the periodic renewal of
// full_service plans' included credits, and the credit product catalog. This is the public
// entry used by its own main and by the all-in-one binary.
package billing

import (
	"context"
	"time"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
	"github.com/chorus-sms/chorus/pkg/service"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	"github.com/chorus-sms/chorus/services/billing/internal/renewal"
	"github.com/chorus-sms/chorus/services/billing/internal/server"
	"github.com/chorus-sms/chorus/services/billing/internal/store"
	"github.com/chorus-sms/chorus/services/billing/migrations"
)

// Schema is the PostgreSQL schema the service owns.
const Schema = "billing"

// DefaultRenewalInterval is how often the service looks for full_service periods that ended.
// It bounds how long an ended period's included credits stay spendable (and shown in the
// billing status) before they expire and the new period's are granted.
const DefaultRenewalInterval = time.Minute

// def is the billing service: its registry row, its schema and its pool (CHORUS_DB_MAX_CONNS,
// default 12: gRPC calls, the charges and holds of every dispatched message, River's own
// connections and the renewal sweep); billing uses no Redis.
var def = service.Def{Service: registry.Billing, Layout: service.Layout{
	Schema: Schema, Migrations: migrations.FS, With: migrations.With, DefaultConns: 12,
}}

// Config is the billing process configuration.
type Config struct {
	service.Storage               // CHORUS_DATABASE_URL, CHORUS_DB_MAX_CONNS
	RenewalInterval time.Duration // CHORUS_RENEWAL_INTERVAL; 0 means DefaultRenewalInterval
	process.Wiring                // the logger; billing calls no other service
}

// ConfigFromEnv reads the CHORUS_* variables of the billing service.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		Storage:         def.StorageFromEnv(r),
		RenewalInterval: r.Duration("CHORUS_RENEWAL_INTERVAL", DefaultRenewalInterval),
	}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(def.Service, ConfigFromEnv, New)

// New connects, migrates and builds the service: it renews ended full_service periods (River's
// leader schedules the sweeps) and answers gRPC. Its Close lets a running sweep finish
// (bounded).
func New(ctx context.Context, cfg Config) (service.Server, error) {
	return def.Build(ctx, cfg.Storage, cfg.Wiring, func(sh *service.Shell) error {
		st := store.New(sh.Pool)
		sh.GRPC = rpcserver.New(sh.Log, server.UnscopedMethods...)
		billingv1.RegisterBillingServiceServer(sh.GRPC, server.New(st))
		every := cfg.RenewalInterval
		if every <= 0 {
			every = DefaultRenewalInterval
		}
		sweeps, err := renewal.New(sh.Pool, Schema, st, every, sh.Log)
		if err != nil {
			return err
		}
		// A running sweep finishes (bounded) after the gRPC server stops and before the pool closes.
		sh.Starts("renewal sweeps", sweeps)
		return nil
	})
}
