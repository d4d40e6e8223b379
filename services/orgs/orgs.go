// Package orgs is the organizations and memberships service: the public entry used by its own
// main and by the all-in-one binary.
package orgs

import (
	"context"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
	"github.com/chorus-sms/chorus/pkg/service"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/orgs/internal/server"
	"github.com/chorus-sms/chorus/services/orgs/internal/store"
	"github.com/chorus-sms/chorus/services/orgs/migrations"
)

// Schema is the PostgreSQL schema the service owns.
const Schema = "orgs"

// def is the orgs service: its registry row, its schema, its Redis and its pool
// (CHORUS_DB_MAX_CONNS, default 4: orgs only answers short gRPC reads and writes, and the
// gateways cache membership checks in process).
var def = service.Def{Service: registry.Orgs, Layout: service.Layout{
	Schema: Schema, Migrations: migrations.FS, Redis: true, DefaultConns: 4,
}}

// Config is the orgs process configuration.
type Config struct {
	service.Storage // CHORUS_DATABASE_URL, CHORUS_REDIS_URL, CHORUS_DB_MAX_CONNS
	process.Wiring  // the logger; orgs calls no other service
}

// ConfigFromEnv reads the CHORUS_* variables of the orgs service.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{Storage: def.StorageFromEnv(r)}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(def.Service, ConfigFromEnv, New)

// New connects, migrates and builds the service: it answers gRPC.
func New(ctx context.Context, cfg Config) (service.Server, error) {
	return def.Build(ctx, cfg.Storage, cfg.Wiring, func(sh *service.Shell) error {
		sh.GRPC = rpcserver.New(sh.Log, server.UnscopedMethods...)
		orgsv1.RegisterOrgsServiceServer(sh.GRPC, server.New(store.New(sh.Pool), sh.Redis, sh.Log))
		return nil
	})
}
