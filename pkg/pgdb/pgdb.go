// Package pgdb opens a service's PostgreSQL pool inside its own schema and applies the
// service's embedded migrations (goose) and River's job tables under one advisory lock, so
// several replicas starting at once migrate exactly once.
package pgdb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

var schemaName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Open connects to dsn with search_path set to schema (then public, where extensions live) and
// traces every query.
func Open(ctx context.Context, dsn, schema string) (*pgxpool.Pool, error) {
	if !schemaName.MatchString(schema) {
		return nil, fmt.Errorf("pgdb: invalid schema name %q", schema)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgdb: parse dsn: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema + ",public"
	// Queries become spans of the request's trace (statement text only, never the arguments:
	// they hold phone numbers and names).
	cfg.ConnConfig.Tracer = otelpgx.NewTracer()
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

// Migrate creates schema if needed and applies the goose migrations in migrations (files at
// its root) and River's migrations, holding a session advisory lock keyed by the schema.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string, migrations fs.FS) (err error) {
	if !schemaName.MatchString(schema) {
		return fmt.Errorf("pgdb: invalid schema name %q", schema)
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

	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
	if err != nil {
		return fmt.Errorf("pgdb: river migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("pgdb: river migrations: %w", err)
	}

	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations,
		goose.WithTableName(schema+".goose_db_version"))
	if err != nil {
		return fmt.Errorf("pgdb: goose provider: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("pgdb: migrations of %s: %w", schema, err)
	}
	return nil
}
