// Package migrations holds the campaigns schema migrations, applied at start by pgdb.Migrate.
package migrations

import (
	"embed"

	"github.com/chorus-sms/chorus/pkg/pgdb"
)

// Schema is the schema these migrations build: campaigns.Schema, named here too for the tests
// inside the service, which cannot import the service.
const Schema = "campaigns"

// FS holds the numbered goose migrations.
//
//go:embed *.sql
var FS embed.FS

// With is what the campaigns schema holds besides its own tables: River's (start and fan-out
// jobs), processed_events (messaging events it consumes for its counters) and the outbox of
// its own campaign.changed events.
var With = []pgdb.MigrateOption{pgdb.WithRiver(), pgdb.WithProcessedEvents(), pgdb.WithOutbox()}
