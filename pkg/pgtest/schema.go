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
