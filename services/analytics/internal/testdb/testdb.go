// Package testdb gives the analytics service's tests a database of their own, its schema
// migrated as the service migrates it at start.
package testdb

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/analytics/migrations"
)

// Schema is the schema the service owns (analytics.Schema, which tests inside the service
// cannot import).
const Schema = "analytics"

// Pool opens a pool on a new database with the analytics schema, closed when tb ends.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return pgtest.SchemaPool(tb, Schema, migrations.FS, migrations.With...)
}
