package lookup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/pkg/jobs"
)

// maxAttempts caps the retries of a lookup that keeps failing. With River's backoff (attempt⁴
// seconds) eight attempts span about eighty minutes; after that the job is discarded and the
// contact stays null until an inbound message marks it textable.
const maxAttempts = 8

// Args is the job of looking up the phone a contact was given at PhoneSetAt. It is unique per
// contact, phone and setting, so inserting it twice is a no-op. The setting time is part of the
// key because a number set again (A, then B, then A) must be looked up again: a key of contact
// and phone alone would find the first lookup of A still "running" in River (its completion is
// written in batches, just after its result) and skip the new job, leaving the contact null.
type Args struct {
	OrganizationID uuid.UUID `json:"organization_id" river:"unique"`
	ContactID      uuid.UUID `json:"contact_id" river:"unique"`
	Phone          string    `json:"phone" river:"unique"`
	PhoneSetAt     time.Time `json:"phone_set_at" river:"unique"`
}

// Kind implements river.JobArgs.
func (Args) Kind() string { return "contacts.phone_lookup" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		MaxAttempts: maxAttempts,
		UniqueOpts:  river.UniqueOpts{ByArgs: true},
	}
}

// Recorder stores a lookup result; it must change nothing when the contact's phone is no longer
// the one looked up or its textability is already known.
type Recorder interface {
	SetTextable(ctx context.Context, org, contact uuid.UUID, phone string, textable bool) (bool, error)
}

// worker runs lookup jobs.
type worker struct {
	river.WorkerDefaults[Args]
	provider Provider
	recorder Recorder
	log      *slog.Logger
}

// Timeout bounds one attempt; the provider's own HTTP timeout is shorter.
func (w *worker) Timeout(*river.Job[Args]) time.Duration { return 30 * time.Second }

// Work looks the phone up; a failed attempt returns its error so River retries with backoff.
func (w *worker) Work(ctx context.Context, job *river.Job[Args]) error {
	a := job.Args
	err := w.lookUp(ctx, a.OrganizationID, a.ContactID, a.Phone)
	if errors.Is(err, ErrUndetermined) {
		return river.JobCancel(err)
	}
	if err != nil {
		return fmt.Errorf("%w (attempt %d of %d)", err, job.Attempt, job.MaxAttempts)
	}
	return nil
}

// lookUp asks the provider and records the answer. An undetermined line type is logged and
// returned as ErrUndetermined, not to be retried: the contact stays null.
func (w *worker) lookUp(ctx context.Context, org, contact uuid.UUID, phone string) error {
	textable, err := w.provider.Textable(ctx, phone)
	if errors.Is(err, ErrUndetermined) {
		w.log.WarnContext(ctx, "phone lookup undetermined; contact stays null", "contact", contact, "err", err)
		return err
	}
	if err != nil {
		return fmt.Errorf("phone lookup of contact %s: %w", contact, err)
	}
	_, err = w.recorder.SetTextable(ctx, org, contact, phone, textable)
	return err
}

// Jobs queues and works lookups in the service's schema.
type Jobs struct {
	*jobs.Client
}

// NewJobs builds the River client, working lookups and what more adds (the other queues, each
// of its own, so it never waits behind lookups, nor they behind it); Start begins working. An
// import's lookups are worked as bulk says.
func NewJobs(pool *pgxpool.Pool, schema string, p Provider, rec Recorder, bulk Bulk, log *slog.Logger, more ...jobs.Option) (*Jobs, error) {
	w := &worker{provider: p, recorder: rec, log: log}
	// Inserts notify the queue, but River rate-limits those notifications; polling this often
	// keeps a lookup within about a second of the phone being set even then.
	opts := append([]jobs.Option{jobs.PollEvery(250 * time.Millisecond),
		jobs.Queue(river.QueueDefault, 20), jobs.Queue(BatchQueue, batchWorkers),
		jobs.Work(w), jobs.Work(&batchWorker{one: w, source: bulk.Source, pace: newPacer(bulk.PerSecond)})}, more...)
	c, err := jobs.NewClient("lookup", pool, schema, log, opts...)
	if err != nil {
		return nil, err
	}
	return &Jobs{Client: c}, nil
}

// EnqueueTx queues a lookup of the phone the contact was given at setAt, inside tx.
func (j *Jobs) EnqueueTx(ctx context.Context, tx pgx.Tx, org, contact uuid.UUID, phone string, setAt time.Time) error {
	args := Args{OrganizationID: org, ContactID: contact, Phone: phone, PhoneSetAt: setAt}
	if _, err := j.InsertTx(ctx, tx, args, nil); err != nil {
		return fmt.Errorf("queue phone lookup: %w", err)
	}
	return nil
}
