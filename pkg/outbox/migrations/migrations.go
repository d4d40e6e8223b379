// Package migrations holds the tables pkg/outbox works on, as goose migrations that
// pgdb.Migrate applies in a service's schema (pgdb.WithOutbox, pgdb.WithProcessedEvents), the
// way River ships its own. Each set keeps its own version table, so it evolves apart from the
// services' migrations.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed outbox/*.sql processed/*.sql
var files embed.FS

// Outbox creates the outbox table a producer's relay publishes from.
var Outbox = sub("outbox")

// ProcessedEvents creates the processed_events table a consumer records handled events in.
var ProcessedEvents = sub("processed")

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // dir is a literal embedded above
	}
	return f
}
