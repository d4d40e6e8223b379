// Package imports is the River job that merges a staged contact import, batch by batch.
package imports

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/pkg/jobs"
	"github.com/chorus-sms/chorus/services/contacts/internal/lookup"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// QueueName is the River queue of import jobs; two run at once, each a transaction at a time,
// so imports never take every connection of the service.
const QueueName = "imports"

// maxAttempts bounds retries of an import whose batches keep failing (a deadlock with a
// concurrent write is retried); after the last the import is marked failed.
const maxAttempts = 10

// Args is the job of merging one import; unique per import.
type Args struct {
	OrganizationID uuid.UUID `json:"organization_id" river:"unique"`
	ImportID       uuid.UUID `json:"import_id" river:"unique"`
}

// Kind implements river.JobArgs.
func (Args) Kind() string { return "contacts.import" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: maxAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type worker struct {
	river.WorkerDefaults[Args]
	store   *store.Store
	lookups *store.BulkLookupQueue
	reason  store.RejectReason
	log     *slog.Logger
}

// stagingPoll is how often a merge that has caught up with its upload looks for more staged
// lines: short beside a batch's merge, and one indexed read each time.
const stagingPoll = 150 * time.Millisecond

// Work merges batches until the import is done (waiting for the lines of an upload still
// being sent as they are staged), in runs of jobs.RunBudget (a large file takes
// several runs, each resuming after the last committed batch).
func (w *worker) Work(ctx context.Context, job *river.Job[Args]) error {
	a := job.Args
	err := jobs.Resumable(ctx, func(ctx context.Context) error {
		for {
			p, err := w.store.MergeImportBatch(ctx, a.OrganizationID, a.ImportID, *w.lookups, w.reason)
			if err != nil || p == store.ImportDone {
				return err
			}
			if p == store.ImportWaiting {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(stagingPoll):
				}
			}
		}
	})
	if err != nil && job.Attempt >= job.MaxAttempts && ctx.Err() == nil {
		w.log.ErrorContext(ctx, "contact import failed", "import", a.ImportID, "err", err)
		if ferr := w.store.FailImport(ctx, a.OrganizationID, a.ImportID); ferr != nil {
			return fmt.Errorf("%w (and marking it failed: %w)", err, ferr)
		}
	}
	return err
}

// Queue is the import queue of the service's River client (an option of lookup.NewJobs): it
// merges with st, queues each batch's lookups with lookups and gives rejected rows the reasons
// reason gives. lookups is read when a job runs: it is the River client this queue is part of,
// built after it.
func Queue(st *store.Store, lookups *store.BulkLookupQueue, reason store.RejectReason, log *slog.Logger) []jobs.Option {
	return []jobs.Option{jobs.Queue(QueueName, 2), jobs.Work(&worker{store: st, lookups: lookups, reason: reason, log: log})}
}

// Enqueuer queues import jobs on the service's River client.
type Enqueuer struct{ Jobs *lookup.Jobs }

// EnqueueImportTx implements store.ImportQueue.
func (e Enqueuer) EnqueueImportTx(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) error {
	if _, err := e.Jobs.InsertTx(ctx, tx, Args{OrganizationID: org, ImportID: id}, nil); err != nil {
		return fmt.Errorf("queue import: %w", err)
	}
	return nil
}
