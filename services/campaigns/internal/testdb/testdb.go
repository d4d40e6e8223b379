// Package testdb gives the campaigns service's tests a database of their own, its schema
// migrated as the service migrates it at start.
package testdb

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/campaigns/migrations"
)

// Schema is the schema the service owns (campaigns.Schema, which tests inside the service
// cannot import).
const Schema = "campaigns"

// Pool opens a pool on a new database with the campaigns schema, closed when tb ends.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return pgtest.SchemaPool(tb, Schema, migrations.FS, migrations.With...)
}
