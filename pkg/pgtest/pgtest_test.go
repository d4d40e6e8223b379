package pgtest

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Close()
	os.Exit(code)
}

var builds atomic.Int32

var seeded = NewTemplate("pgtest_seeded", func(ctx context.Context, dsn string) error {
	builds.Add(1)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE TABLE notes (body text); INSERT INTO notes VALUES ('from the template')`)
	return err
})

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func notes(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT body FROM notes ORDER BY body`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// Every test's database starts as the built template, the build runs once, and what one test
// writes is not seen by another.
func TestTemplateCopiesAreBuiltOnceAndIndependent(t *testing.T) {
	t.Parallel()
	a, b := connect(t, seeded.NewDatabase(t)), connect(t, seeded.NewDatabase(t))
	_, err := a.Exec(context.Background(), `INSERT INTO notes VALUES ('only in a')`)
	require.NoError(t, err)
	assert.Equal(t, []string{"from the template", "only in a"}, notes(t, a))
	assert.Equal(t, []string{"from the template"}, notes(t, b))
	assert.EqualValues(t, 1, builds.Load())
}

func TestNewDatabaseIsEmpty(t *testing.T) {
	t.Parallel()
	var tables int
	require.NoError(t, connect(t, NewDatabase(t)).QueryRow(context.Background(),
		`SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`).Scan(&tables))
	assert.Zero(t, tables)
}

// A database whose test process is gone (no lease on the server) is dropped; a live process's
// are kept.
func TestOrphansOfAGoneProcessAreDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner, err := start()
	require.NoError(t, err)
	orphan, mine := testPrefix+randomHex(4)+"_orphan", testPrefix+owner+"_kept"
	require.NoError(t, admin(ctx, "CREATE DATABASE "+orphan, "CREATE DATABASE "+mine))
	t.Cleanup(func() { _ = dropDatabase(orphan); _ = dropDatabase(mine) })

	conn := connect(t, AdminDSN())
	dropOrphans(ctx, conn)
	var left []string
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname IN ($1, $2)`, orphan, mine)
	require.NoError(t, err)
	left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{mine}, left)
}
