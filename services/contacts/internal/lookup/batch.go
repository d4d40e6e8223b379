package lookup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/pkg/jobs"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// BatchQueue is the River queue of an import's lookups, one job per batch of the import. Its
// two workers each run up to batchConcurrency lookups at once, started at most Bulk.PerSecond
// a second between them: the provider's pace for a bulk load (its rate limit), beside the
// default queue's lookups of contacts created one at a time.
const BatchQueue = "lookup_batches"

const (
	batchWorkers     = 2
	batchConcurrency = 10
	batchChunk       = 100 // lookups done between two deletes of their rows
)

// BatchArgs is the job of looking up the phones one batch of an import gave (the rows of
// import_lookups); unique per batch.
type BatchArgs struct {
	OrganizationID uuid.UUID `json:"organization_id" river:"unique"`
	ImportID       uuid.UUID `json:"import_id" river:"unique"`
	Batch          int32     `json:"batch" river:"unique"`
}

// Kind implements river.JobArgs.
func (BatchArgs) Kind() string { return "contacts.phone_lookup_batch" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (BatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: BatchQueue, MaxAttempts: maxAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// DefaultPerSecond is how many of an import's lookups start a second unless configured:
// Twilio Lookup's default rate limit per account.
const DefaultPerSecond = 100

// Bulk is how an import's lookups are worked: where they are read from, and how many start a
// second (0: DefaultPerSecond).
type Bulk struct {
	Source    BatchSource
	PerSecond int
}

// BatchSource holds the lookups of an import's batches.
type BatchSource interface {
	ImportLookups(ctx context.Context, org, importID uuid.UUID, batch int32) ([]store.LookupRequest, error)
	DoneImportLookups(ctx context.Context, org, importID uuid.UUID, batch int32, contacts []uuid.UUID) error
}

type batchWorker struct {
	river.WorkerDefaults[BatchArgs]
	one    *worker // looks up one phone
	source BatchSource
	pace   *pacer
}

// Work looks up the batch's phones still pending, a chunk at a time, deleting each chunk's
// done rows, so a run again (a retry, or the next run of a long batch) does only what is left.
// A lookup that failed keeps its row and fails the job, which River retries with backoff; on
// the last attempt every row is dropped, as a lookup job is discarded: the contact stays null.
func (w *batchWorker) Work(ctx context.Context, job *river.Job[BatchArgs]) error {
	a, last := job.Args, job.Attempt >= job.MaxAttempts
	return jobs.Resumable(ctx, func(ctx context.Context) error {
		reqs, err := w.source.ImportLookups(ctx, a.OrganizationID, a.ImportID, a.Batch)
		if err != nil {
			return err
		}
		var failed error
		for len(reqs) > 0 {
			chunk := reqs[:min(batchChunk, len(reqs))]
			reqs = reqs[len(chunk):]
			done, err := w.lookUpAll(ctx, chunk, last)
			if err != nil {
				failed = err
			}
			if err := w.source.DoneImportLookups(ctx, a.OrganizationID, a.ImportID, a.Batch, done); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return failed
	})
}

// lookUpAll runs reqs, batchConcurrency at a time, and returns the contacts whose lookup is
// over (done, undetermined, or failed when giveUp) and the last failure.
func (w *batchWorker) lookUpAll(ctx context.Context, reqs []store.LookupRequest, giveUp bool) ([]uuid.UUID, error) {
	var (
		mu     sync.Mutex
		done   = make([]uuid.UUID, 0, len(reqs))
		failed error
		wg     sync.WaitGroup
		sem    = make(chan struct{}, batchConcurrency)
	)
	for _, r := range reqs {
		if err := w.pace.wait(ctx); err != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := w.one.lookUp(ctx, r.Org, r.Contact, r.Phone)
			mu.Lock()
			defer mu.Unlock()
			if err == nil || errors.Is(err, ErrUndetermined) || giveUp {
				done = append(done, r.Contact)
			} else {
				failed = err
			}
		}()
	}
	wg.Wait()
	return done, failed
}

// EnqueueLookupBatchTx queues the job of a batch's lookups, inside the batch's transaction.
func (j *Jobs) EnqueueLookupBatchTx(ctx context.Context, tx pgx.Tx, org, importID uuid.UUID, batch int32) error {
	if _, err := j.InsertTx(ctx, tx, BatchArgs{OrganizationID: org, ImportID: importID, Batch: batch}, nil); err != nil {
		return fmt.Errorf("queue the lookups of an import's batch: %w", err)
	}
	return nil
}

// pacer spaces the starts of bulk lookups 1/rate apart, shared by the batch workers.
type pacer struct {
	mu    sync.Mutex
	next  time.Time
	every time.Duration
}

func newPacer(perSecond int) *pacer {
	if perSecond <= 0 {
		perSecond = DefaultPerSecond
	}
	return &pacer{every: time.Second / time.Duration(perSecond)}
}

// wait returns at the next start's time, or with ctx's error.
func (p *pacer) wait(ctx context.Context) error {
	p.mu.Lock()
	now := time.Now()
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.every)
	p.mu.Unlock()
	if at.Equal(now) {
		return ctx.Err()
	}
	t := time.NewTimer(at.Sub(now))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
