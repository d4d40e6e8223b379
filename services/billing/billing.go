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

// DefaultDBMaxConns bounds the pool (CHORUS_DB_MAX_CONNS): gRPC calls (charges and holds of
// every dispatched message), River's own connections and the renewal sweep.
const DefaultDBMaxConns = 12

// layout is the billing schema and its pool; billing uses no Redis.
var layout = service.Layout{Schema: Schema, Migrations: migrations.FS, With: migrations.With, DefaultConns: DefaultDBMaxConns}

// Config is the billing process configuration.
type Config struct {
	service.Storage               // CHORUS_DATABASE_URL, CHORUS_DB_MAX_CONNS
	RenewalInterval time.Duration // CHORUS_RENEWAL_INTERVAL; 0 means DefaultRenewalInterval
	process.Wiring                // the logger; billing calls no other service
}

// ConfigFromEnv reads the CHORUS_* variables of the billing service.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		Storage:         service.StorageFromEnv(r, layout),
		RenewalInterval: r.Duration("CHORUS_RENEWAL_INTERVAL", DefaultRenewalInterval),
	}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(registry.Billing, ConfigFromEnv, New)

// Service is a running billing service: it renews ended full_service periods (River's leader
// schedules the sweeps) and answers gRPC. Close lets a running sweep finish (bounded).
type Service struct{ service.Server }

// New connects, migrates and builds the gRPC server and the renewal sweep.
func New(ctx context.Context, cfg Config) (*Service, error) {
	srv, err := service.Build(ctx, service.Config{Service: registry.Billing, Wiring: cfg.Wiring, Storage: cfg.Storage, Layout: layout}, func(sh *service.Shell) error {
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
	if err != nil {
		return nil, err
	}
	return &Service{srv}, nil
}
