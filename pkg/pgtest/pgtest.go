// Package pgtest gives each test its own PostgreSQL database on the test server, dropped when
// the test ends: an empty one (NewDatabase), or a clone of a template migrated once per test
// process (Template), which is much faster than migrating every test's database.
//
// Every database is named after the test process that made it, and the process holds a lease
// (a connection whose application_name names it) while it runs; databases whose process is gone
// (a crashed or killed run) are dropped by the next run.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

const (
	testPrefix     = "chorus_test_"
	templatePrefix = "chorus_tpl_"
	leasePrefix    = "chorus_test_lease_"
)

// AdminDSN is the server the tests use: CHORUS_TEST_DATABASE_URL, or the local trust-auth
// PostgreSQL every development machine and CI has.
func AdminDSN() string {
	if dsn := os.Getenv("CHORUS_TEST_DATABASE_URL"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// process is this test process's lease on the server; owner is the tag in its databases' names.
var process struct {
	once  sync.Once
	err   error
	owner string
	lease *pgx.Conn
}

// start takes the lease and drops what processes that are gone left behind, once.
func start() (string, error) {
	process.once.Do(func() {
		process.owner = randomHex(4)
		cfg, err := pgx.ParseConfig(AdminDSN())
		if err != nil {
			process.err = fmt.Errorf("pgtest: CHORUS_TEST_DATABASE_URL: %w", err)
			return
		}
		cfg.RuntimeParams["application_name"] = leasePrefix + process.owner
		process.lease, err = pgx.ConnectConfig(context.Background(), cfg)
		if err != nil {
			process.err = fmt.Errorf("pgtest: connect to %s: %w", AdminDSN(), err)
			return
		}
		dropOrphans(context.Background(), process.lease)
	})
	return process.owner, process.err
}

// dropOrphans drops the test databases and templates whose process no longer holds its lease.
// It is best effort: another process may be sweeping the same databases.
func dropOrphans(ctx context.Context, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, `
		SELECT datname FROM pg_database d
		WHERE datname ~ '^chorus_(test|tpl)_[0-9a-f]{8}_'
		  AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a
		                  WHERE a.application_name = $1 || split_part(d.datname, '_', 3))`, leasePrefix)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range names {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
}

// NewDatabase creates an empty database and returns its DSN; it is dropped at cleanup.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	return newDatabase(tb, "")
}

// newDatabase creates a database, a copy of template unless that is empty, and returns its DSN.
func newDatabase(tb testing.TB, template string) string {
	tb.Helper()
	owner, err := start()
	if err != nil {
		tb.Fatal(err)
	}
	name := testPrefix + owner + "_" + randomHex(6)
	stmt := "CREATE DATABASE " + name
	if template != "" {
		stmt += " TEMPLATE " + template
	}
	if err := admin(context.Background(), stmt); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	// The drop runs in the background: it waits for a checkpoint, about a second, that the
	// next test need not wait for. Close waits for the drops; a process that ends without
	// Close leaves its databases to the next run's sweep of orphans.
	drops.Add(1)
	tb.Cleanup(func() {
		go func() {
			defer drops.Done()
			if err := dropDatabase(name); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			}
		}()
	})
	dsn, err := dsnOf(name)
	if err != nil {
		tb.Fatal(err)
	}
	return dsn
}

// admin runs statements on the server's maintenance database, on a connection of their own.
func admin(ctx context.Context, stmts ...string) error {
	conn, err := pgx.Connect(ctx, AdminDSN())
	if err != nil {
		return fmt.Errorf("connect to %s: %w", AdminDSN(), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func dropDatabase(name string) error {
	return admin(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
}

// dsnOf is the DSN of database name on the test server.
func dsnOf(name string) (string, error) {
	u, err := url.Parse(AdminDSN())
	if err != nil {
		return "", fmt.Errorf("pgtest: CHORUS_TEST_DATABASE_URL must be a postgres:// URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// drops counts the test databases still being dropped.
var drops sync.WaitGroup

// Close waits for the test databases to be dropped, drops the templates this process built and
// ends its lease. Call it from TestMain after m.Run; without it the next run drops them.
func Close() {
	drops.Wait()
	templates.Lock()
	built := templates.names
	templates.names = nil
	templates.Unlock()
	for _, name := range built {
		if err := dropDatabase(name); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		}
	}
	if process.lease != nil {
		_ = process.lease.Close(context.Background())
	}
}

// Main runs a test binary's tests, then Close and each of after (e.g. redistest.Close), and
// exits with the tests' status: the whole TestMain of a package that uses pgtest.
func Main(m *testing.M, after ...func()) {
	code := m.Run()
	Close()
	for _, f := range after {
		f()
	}
	os.Exit(code)
}
