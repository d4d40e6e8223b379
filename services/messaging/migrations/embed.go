// Package migrations holds the messaging schema migrations, applied at start by pgdb.Migrate.
package migrations

import "embed"

// FS holds the numbered goose migrations.
//
//go:embed *.sql
var FS embed.FS
