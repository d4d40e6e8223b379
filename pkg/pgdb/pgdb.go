// Package pgdb opens a service's PostgreSQL pool inside its own schema and applies the
// service's embedded migrations (goose), and the tables of River and of pkg/outbox where the
// service uses them, under one advisory lock, so several replicas starting at once migrate
// exactly once.
package pgdb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"regexp"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	outboxmigrations "github.com/chorus-sms/chorus/pkg/outbox/migrations"
)

var schemaName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// OpenOption tunes the pool Open builds.
type OpenOption func(*pgxpool.Config)

// MinConns is the smallest pool a service can start with: Migrate holds one connection for
// its advisory lock while the migrators use another.
const MinConns = 2

// WithMaxConns bounds the pool at n connections (CHORUS_DB_MAX_CONNS); pgx's default is the
// larger of 4 and the number of CPUs, too few for a service with many workers and too many to
// multiply by every service and replica on a small server.
func WithMaxConns(n int) OpenOption {
	return func(c *pgxpool.Config) { c.MaxConns = int32(min(n, math.MaxInt32)) }
}

// Open connects to dsn with search_path set to schema (then public, where extensions live) and
// traces every query.
func Open(ctx context.Context, dsn, schema string, opts ...OpenOption) (*pgxpool.Pool, error) {
	if !schemaName.MatchString(schema) {
		return nil, fmt.Errorf("pgdb: invalid schema name %q", schema)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgdb: parse dsn: %w", err)
	}
	for _, opt := range opts {
		opt(cfg)
	}
	if cfg.MaxConns < MinConns {
		return nil, fmt.Errorf("pgdb: pool of %d connections: want at least %d", cfg.MaxConns, MinConns)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema + ",public"
	// Queries become spans of the request's trace (statement text only, never the arguments:
	// they hold phone numbers and names).
	cfg.ConnConfig.Tracer = otelpgx.NewTracer()
	afterConnect := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		registerUUID(conn)
		if afterConnect != nil {
			return afterConnect(ctx, conn)
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgdb: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgdb: ping: %w", err)
	}
	return pool, nil
}

// MigrateOption adds tables a service needs besides its own to what Migrate applies.
type MigrateOption func(*plan)

type plan struct {
	river, outbox, processedEvents bool
}

// WithRiver applies River's migrations: for services that run River jobs. The others keep
// their schema free of River's tables.
func WithRiver() MigrateOption { return func(p *plan) { p.river = true } }

// WithOutbox applies pkg/outbox's migrations of the outbox table: for event producers.
func WithOutbox() MigrateOption { return func(p *plan) { p.outbox = true } }

// WithProcessedEvents applies pkg/outbox's migrations of the processed_events table: for event
// consumers.
func WithProcessedEvents() MigrateOption { return func(p *plan) { p.processedEvents = true } }

// Migrate creates schema if needed and applies, holding a session advisory lock keyed by the
// schema: River's migrations (WithRiver), pkg/outbox's (WithOutbox, WithProcessedEvents), then
// the goose migrations in migrations (files at its root; nil for none). Each goose set keeps
// its own version table in schema (goose_db_version for the service's, outbox_goose_version
// and processed_events_goose_version for pkg/outbox's), so they are numbered independently.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string, migrations fs.FS, opts ...MigrateOption) (err error) {
	if !schemaName.MatchString(schema) {
		return fmt.Errorf("pgdb: invalid schema name %q", schema)
	}
	var p plan
	for _, opt := range opts {
		opt(&p)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgdb: acquire: %w", err)
	}
	defer conn.Release()
	lockKey := "chorus.migrate." + schema
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext($1))`, lockKey); err != nil {
		return fmt.Errorf("pgdb: migration lock: %w", err)
	}
	defer func() {
		// A fresh context: the unlock must happen even when ctx was canceled.
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext($1))`, lockKey); uerr != nil {
			err = errors.Join(err, fmt.Errorf("pgdb: migration unlock: %w", uerr))
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("pgdb: create schema: %w", err)
	}

	if p.river {
		migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
		if err != nil {
			return fmt.Errorf("pgdb: river migrator: %w", err)
		}
		if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("pgdb: river migrations: %w", err)
		}
	}

	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	sets := []struct {
		on      bool
		name    string
		files   fs.FS
		version string
	}{
		{p.outbox, "outbox", outboxmigrations.Outbox, "outbox_goose_version"},
		{p.processedEvents, "processed_events", outboxmigrations.ProcessedEvents, "processed_events_goose_version"},
		{migrations != nil, schema, migrations, "goose_db_version"},
	}
	for _, set := range sets {
		if !set.on {
			continue
		}
		provider, err := goose.NewProvider(goose.DialectPostgres, db, set.files,
			goose.WithTableName(schema+"."+set.version))
		if err != nil {
			return fmt.Errorf("pgdb: goose provider of %s: %w", set.name, err)
		}
		if _, err := provider.Up(ctx); err != nil {
			return fmt.Errorf("pgdb: %s migrations in %s: %w", set.name, schema, err)
		}
	}
	return nil
}
