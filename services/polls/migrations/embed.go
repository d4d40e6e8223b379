// Package migrations holds the polls schema migrations, applied at start by pgdb.Migrate.
package migrations

import (
	"embed"

	"github.com/chorus-sms/chorus/pkg/pgdb"
)

// Schema is the schema these migrations build: polls.Schema, named here too for the tests
// inside the service, which cannot import the service.
const Schema = "polls"

// FS holds the numbered goose migrations.
//
//go:embed *.sql
var FS embed.FS

// With is what the polls schema holds besides its own tables: River's (start, step, finish and
// timeout jobs), processed_events (the messaging and contacts events it consumes) and the
// outbox of its own poll.response_recorded and poll.completed events.
var With = []pgdb.MigrateOption{pgdb.WithRiver(), pgdb.WithProcessedEvents(), pgdb.WithOutbox()}
