// Package migrations holds the gateway's schema migrations (its idempotency keys), applied at
// start by pgdb.Migrate.
package migrations

import "embed"

// FS holds the numbered goose migrations.
//
//go:embed *.sql
var FS embed.FS
