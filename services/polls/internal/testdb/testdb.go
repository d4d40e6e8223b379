// Package testdb gives the polls service's tests a database of their own, its schema
// migrated as the service migrates it at start.
package testdb

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/polls/migrations"
)

// Schema is the schema the service owns (polls.Schema, which tests inside the service
// cannot import).
const Schema = "polls"

// Pool opens a pool on a new database with the polls schema, closed when tb ends.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return pgtest.SchemaPool(tb, Schema, migrations.FS, migrations.With...)
}
