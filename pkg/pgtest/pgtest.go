// Package pgtest gives each test its own PostgreSQL database on the test server, dropped when
// the test ends. Services keep their fixed schema names inside it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// AdminDSN is the server the tests use: CHORUS_TEST_DATABASE_URL, or the local trust-auth
// PostgreSQL every development machine and CI has.
func AdminDSN() string {
	if dsn := os.Getenv("CHORUS_TEST_DATABASE_URL"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// NewDatabase creates an empty database and returns its DSN; it is dropped at cleanup.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, AdminDSN())
	if err != nil {
		tb.Fatalf("pgtest: connect to %s: %v", AdminDSN(), err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "chorus_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), AdminDSN())
		if err != nil {
			tb.Logf("pgtest: drop %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(AdminDSN())
	if err != nil {
		tb.Fatalf("pgtest: CHORUS_TEST_DATABASE_URL must be a postgres:// URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}
