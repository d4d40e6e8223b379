package pgdb_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/pgtest"
)

const schema = "svc"

// service is a service's migrations now that pkg/outbox ships the outbox tables.
var service = fstest.MapFS{"00001_svc.sql": {Data: []byte(`-- +goose Up
CREATE TABLE things (id bigint PRIMARY KEY);
`)}}

// legacy is the same service's 00001 as databases created before pkg/outbox shipped its own
// migrations applied it: the outbox tables were copied into it.
var legacy = fstest.MapFS{"00001_svc.sql": {Data: []byte(`-- +goose Up
CREATE TABLE things (id bigint PRIMARY KEY);
CREATE TABLE outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        uuid NOT NULL UNIQUE,
    event_type      text NOT NULL,
    organization_id uuid NOT NULL,
    payload         bytea NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    published_at    timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
CREATE TABLE processed_events (
    consumer     text NOT NULL,
    event_id     uuid NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);
`)}}

func TestMain(m *testing.M) { pgtest.Main(m) }

func open(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgdb.Open(t.Context(), pgtest.NewDatabase(t), schema)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// A database created before the outbox shipped its migrations (tables from the service's
// 00001, events in them) ends up with exactly the tables a new database gets, its events kept.
func TestOutboxMigrationsGiveOldAndNewDatabasesTheSameTables(t *testing.T) {
	ctx := t.Context()
	fresh := open(t)
	require.NoError(t, pgdb.Migrate(ctx, fresh, schema, service, pgdb.WithOutbox(), pgdb.WithProcessedEvents()))

	old := open(t)
	require.NoError(t, pgdb.Migrate(ctx, old, schema, legacy))
	_, err := old.Exec(ctx, `INSERT INTO outbox (event_id, event_type, organization_id, payload)
		VALUES (gen_random_uuid(), 'thing.made', gen_random_uuid(), '\x00')`)
	require.NoError(t, err)
	require.NoError(t, pgdb.Migrate(ctx, old, schema, service, pgdb.WithOutbox(), pgdb.WithProcessedEvents()))

	assert.Equal(t, describe(t, fresh), describe(t, old))
	var events int
	require.NoError(t, old.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&events))
	assert.Equal(t, 1, events, "the old database keeps its events")

	// Starting again changes nothing.
	require.NoError(t, pgdb.Migrate(ctx, fresh, schema, service, pgdb.WithOutbox(), pgdb.WithProcessedEvents()))
	assert.Equal(t, describe(t, old), describe(t, fresh))
}

// Only what a service asks for is created: a producer gets no processed_events, and no
// service gets River's tables unless it runs River.
func TestMigrateCreatesOnlyTheTablesAsked(t *testing.T) {
	ctx := t.Context()
	plain := open(t)
	require.NoError(t, pgdb.Migrate(ctx, plain, schema, service))
	assert.Equal(t, []string{"goose_db_version", "things"}, tables(t, plain))

	producer := open(t)
	require.NoError(t, pgdb.Migrate(ctx, producer, schema, service, pgdb.WithOutbox(), pgdb.WithRiver()))
	got := tables(t, producer)
	assert.Subset(t, got, []string{"outbox", "outbox_goose_version", "river_job", "things"})
	assert.NotContains(t, got, "processed_events")
}

// A pool is bounded as configured, and a pool that could hold no connection is refused.
func TestOpenBoundsThePool(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	pool, err := pgdb.Open(t.Context(), dsn, schema, pgdb.WithMaxConns(7))
	require.NoError(t, err)
	defer pool.Close()
	assert.Equal(t, int32(7), pool.Config().MaxConns)

	// Migrate holds a connection for its lock while the migrators need another: a pool of one
	// would wait forever at start.
	_, err = pgdb.Open(t.Context(), dsn, schema, pgdb.WithMaxConns(1))
	assert.ErrorContains(t, err, "want at least 2")
}

// tables lists the tables of the schema.
func tables(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, schema)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

// describe lists the schema's columns, indexes and constraints, one line each.
func describe(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT format('column %s.%s %s null=%s default=%s identity=%s', table_name, column_name,
		              data_type, is_nullable, column_default, is_identity)
		FROM information_schema.columns WHERE table_schema = $1
		UNION ALL
		SELECT format('index %s', indexdef) FROM pg_indexes WHERE schemaname = $1
		UNION ALL
		SELECT format('constraint %s.%s %s', c.conrelid::regclass, c.conname, pg_get_constraintdef(c.oid))
		FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1
		ORDER BY 1`, schema)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return lines
}
