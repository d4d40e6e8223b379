package pgtest

import (
	"context"
	"io/fs"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgdb"
)

// SchemaPool opens a pool on a new database holding a service's schema, migrated as the
// service migrates it at start (migrations and opts), and closed when tb ends.
func SchemaPool(tb testing.TB, schema string, migrations fs.FS, opts ...pgdb.MigrateOption) *pgxpool.Pool {
	tb.Helper()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, NewDatabase(tb), schema)
	require.NoError(tb, err)
	tb.Cleanup(pool.Close)
	require.NoError(tb, pgdb.Migrate(ctx, pool, schema, migrations, opts...))
	return pool
}

// OneConnection opens a pool of one connection on pool's database and settings, closed when
// tb ends. Code that holds a connection and waits for a second (a transaction reading through
// the pool instead of itself) then waits until its context ends: a test of it fails, where on
// a roomy pool it passes and under load it drains the pool.
func OneConnection(tb testing.TB, pool *pgxpool.Pool) *pgxpool.Pool {
	tb.Helper()
	cfg := pool.Config()
	cfg.MaxConns = 1
	one, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(tb, err)
	tb.Cleanup(one.Close)
	return one
}
