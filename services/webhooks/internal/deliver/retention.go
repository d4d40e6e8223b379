package deliver

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/pkg/jobs"
	"github.com/chorus-sms/chorus/services/webhooks/internal/store"
)

// Defaults of the retention sweep.
const (
	// DefaultRetention is how long a delivery is kept once it is no longer pending: well past
	// the retry schedule's 27 h, so a delivery's whole history stays listable for a month.
	DefaultRetention = 30 * 24 * time.Hour
	// pruneEvery is how often the sweep runs.
	pruneEvery = time.Hour
	// pruneBatch bounds each delete statement of a sweep.
	pruneBatch = 1000
)

// retentionQueue holds only the sweep, so it never waits behind attempts.
const retentionQueue = "retention"

// pruneArgs is one sweep of deliveries past the retention.
type pruneArgs struct{}

func (pruneArgs) Kind() string { return "webhooks.prune_deliveries" }

// InsertOpts makes it a sweep: one at a time, never retried (the next one does its work).
func (pruneArgs) InsertOpts() river.InsertOpts { return jobs.SweepInsertOpts(retentionQueue) }

type pruneWorker struct {
	river.WorkerDefaults[pruneArgs]
	store     *store.Store
	retention time.Duration
	log       *slog.Logger
}

// Work deletes what is past the retention now, in batches; a sweep cut short by its timeout
// leaves the rest to the next.
func (w *pruneWorker) Work(ctx context.Context, _ *river.Job[pruneArgs]) error {
	n, err := w.store.PruneDeliveries(ctx, time.Now().Add(-w.retention), pruneBatch)
	if n > 0 {
		w.log.InfoContext(ctx, "webhooks: deleted deliveries past retention", "deleted", n, "retention", w.retention)
	}
	if err != nil {
		return fmt.Errorf("retention sweep: %w", err)
	}
	return nil
}
