// Package migrations holds the analytics schema migrations, applied at start by pgdb.Migrate.
package migrations

import (
	"embed"

	"github.com/chorus-sms/chorus/pkg/pgdb"
)

// FS holds the numbered goose migrations.
//
//go:embed *.sql
var FS embed.FS

// With is what the analytics schema holds besides its rollups: processed_events (the
// messaging and campaigns events it consumes, each applied once).
var With = []pgdb.MigrateOption{pgdb.WithProcessedEvents()}
