// Package migrations holds the contacts schema migrations, applied at start by pgdb.Migrate.
package migrations

import (
	"embed"

	"github.com/chorus-sms/chorus/pkg/pgdb"
)

// FS holds the numbered goose migrations.
//
//go:embed *.sql
var FS embed.FS

// With is what the contacts schema holds besides its own tables: River's (phone lookups) and
// the outbox (contacts events).
var With = []pgdb.MigrateOption{pgdb.WithRiver(), pgdb.WithOutbox()}
