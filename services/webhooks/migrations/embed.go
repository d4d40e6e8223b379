// Package migrations holds the webhooks schema migrations, applied at start by pgdb.Migrate.
package migrations

import (
	"embed"

	"github.com/chorus-sms/chorus/pkg/pgdb"
)

// FS holds the numbered goose migrations.
//
//go:embed *.sql
var FS embed.FS

// With is what the webhooks schema holds besides its own tables: River's (one job per
// delivery attempt) and processed_events (the producers' events it consumes, each fanned out
// once).
var With = []pgdb.MigrateOption{pgdb.WithRiver(), pgdb.WithProcessedEvents()}
