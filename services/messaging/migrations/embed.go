// Package migrations holds the messaging schema migrations, applied at start by pgdb.Migrate.
package migrations

import (
	"embed"

	"github.com/chorus-sms/chorus/pkg/pgdb"
)

// FS holds the numbered goose migrations.
//
//go:embed *.sql
var FS embed.FS

// With is what the messaging schema holds besides its own tables: River's (dispatch, sandbox
// reports, the reconcile sweep), the outbox (messaging events) and processed_events (contacts
// events it consumes).
var With = []pgdb.MigrateOption{pgdb.WithRiver(), pgdb.WithOutbox(), pgdb.WithProcessedEvents()}
