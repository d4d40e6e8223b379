// Package migrations holds the billing schema migrations, applied at start by pgdb.Migrate.
package migrations

import (
	"embed"

	"github.com/chorus-sms/chorus/pkg/pgdb"
)

// FS holds the numbered goose migrations.
//
//go:embed *.sql
var FS embed.FS

// With is what the billing schema holds besides its own tables: River's (period renewal).
var With = []pgdb.MigrateOption{pgdb.WithRiver()}
