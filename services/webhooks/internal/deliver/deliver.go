// Package deliver sends deliveries to their endpoints as River jobs, one job per attempt: a
// signed POST (Standard Webhooks) that succeeds on a 2xx within the timeout, else the next
// attempt is scheduled by the retry schedule, in the transaction that records this one, until
// the schedule is spent and the delivery has failed. An endpoint with no 2xx for longer than
// the disable bound is disabled, saying why.
//
// One endpoint never slows another: each endpoint has at most PerEndpoint attempts running in
// a process (a job finding its endpoint's places taken waits a moment, without a worker), the
// rest of the workers deliver to everyone else, and a failing endpoint's retries wait out
// their backoff in the schedule, not in a worker.
package deliver

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/pkg/jobs"
	"github.com/chorus-sms/chorus/services/webhooks/internal/egress"
	"github.com/chorus-sms/chorus/services/webhooks/internal/signature"
	"github.com/chorus-sms/chorus/services/webhooks/internal/store"
)

// Defaults of Config.
const (
	// DefaultTimeout is how long an endpoint has to answer 2xx.
	DefaultTimeout = 10 * time.Second
	// DefaultDisableAfter is how long an endpoint fails every attempt before it is disabled.
	DefaultDisableAfter = 5 * 24 * time.Hour
	// DefaultWorkers is how many attempts a process runs at once.
	DefaultWorkers = 100
	// DefaultPerEndpoint is how many of them one endpoint may have.
	DefaultPerEndpoint = 4
)

// queue is the River queue of attempts.
const queue = "deliveries"

// busyWait is how long an attempt whose endpoint has no free place waits before it looks again.
const busyWait = 250 * time.Millisecond

// userAgent names the sender to the endpoint.
const userAgent = "Chorus-Webhooks/1"

// Config is the runner's.
type Config struct {
	Pool   *pgxpool.Pool
	Schema string
	Store  *store.Store
	Policy egress.Policy
	Logger *slog.Logger
	// Zero values take the defaults above and DefaultSchedule.
	Timeout      time.Duration
	DisableAfter time.Duration
	Schedule     []time.Duration
	Workers      int
	PerEndpoint  int
	// Retention is how long a delivery no longer pending is kept (DefaultRetention), swept
	// every PruneEvery (an hour).
	Retention  time.Duration
	PruneEvery time.Duration
}

// Runner owns the attempts; its River client's Start and Stop are the runner's.
type Runner struct {
	*jobs.Client
	store        *store.Store
	http         *http.Client
	log          *slog.Logger
	schedule     schedule
	disableAfter time.Duration
	inFlight     *inFlight
}

// New builds the runner; Start begins working attempts.
func New(cfg Config) (*Runner, error) {
	perEndpoint := cmp.Or(cfg.PerEndpoint, DefaultPerEndpoint)
	r := &Runner{
		store: cfg.Store, log: cfg.Logger, schedule: cfg.Schedule, disableAfter: cmp.Or(cfg.DisableAfter, DefaultDisableAfter),
		http:     cfg.Policy.Client(cmp.Or(cfg.Timeout, DefaultTimeout), perEndpoint),
		inFlight: newInFlight(perEndpoint),
	}
	if len(r.schedule) == 0 {
		r.schedule = DefaultSchedule
	}
	var err error
	r.Client, err = jobs.NewClient("deliver", cfg.Pool, cfg.Schema, cfg.Logger, jobs.PollEvery(50*time.Millisecond),
		jobs.Queue(queue, cmp.Or(cfg.Workers, DefaultWorkers)), jobs.Queue(retentionQueue, 1),
		jobs.Periodic(jobs.Sweep(cmp.Or(cfg.PruneEvery, pruneEvery), pruneArgs{})),
		jobs.Work(&attemptWorker{r: r}), jobs.Work(&pruneWorker{store: cfg.Store, retention: cmp.Or(cfg.Retention, DefaultRetention), log: cfg.Logger}))
	if err != nil {
		return nil, err
	}
	return r, nil
}

// attemptArgs is attempt Attempt (1-based) of a delivery in its round: unique, so a fan-out
// or a retry repeated inserts nothing more.
type attemptArgs struct {
	Org      uuid.UUID `json:"org"`
	Delivery uuid.UUID `json:"delivery"`
	Round    int       `json:"round"`
	Attempt  int       `json:"attempt"`
}

func (attemptArgs) Kind() string { return "webhooks.attempt" }

func (attemptArgs) InsertOpts() river.InsertOpts {
	// River retries a job only when the attempt could not be recorded (the database); the
	// endpoint's own failures are retried by the schedule.
	return river.InsertOpts{Queue: queue, MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// Queue inserts the first attempt of each of org's deliveries ids in tx, due at once.
func (r *Runner) Queue(ctx context.Context, tx pgx.Tx, org uuid.UUID, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		params[i] = river.InsertManyParams{Args: attemptArgs{Org: org, Delivery: id, Round: 1, Attempt: 1}}
	}
	if _, err := r.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("queue attempts: %w", err)
	}
	return nil
}

// Retry makes org's delivery id of endpoint pending again and queues its next attempt now.
func (r *Runner) Retry(ctx context.Context, org, endpoint, id uuid.UUID) (store.Delivery, error) {
	tx, err := r.store.Pool().Begin(ctx)
	if err != nil {
		return store.Delivery{}, fmt.Errorf("retry: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	d, err := store.Retry(ctx, tx, org, endpoint, id)
	if err != nil {
		return store.Delivery{}, err
	}
	next := attemptArgs{Org: org, Delivery: id, Round: d.Round, Attempt: d.AttemptCount + 1}
	if _, err := r.InsertTx(ctx, tx, next, nil); err != nil {
		return store.Delivery{}, fmt.Errorf("retry: queue attempt: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return store.Delivery{}, fmt.Errorf("retry: %w", err)
	}
	return d, nil
}

type attemptWorker struct {
	river.WorkerDefaults[attemptArgs]
	r *Runner
}

// Timeout leaves the attempt its HTTP timeout and the time to record it.
func (w *attemptWorker) Timeout(*river.Job[attemptArgs]) time.Duration {
	return w.r.http.Timeout + 10*time.Second
}

func (w *attemptWorker) Work(ctx context.Context, job *river.Job[attemptArgs]) error {
	return w.r.attempt(ctx, job.Args)
}

// attempt makes attempt a.Attempt of its delivery, unless the delivery moved on.
func (r *Runner) attempt(ctx context.Context, a attemptArgs) error {
	due, err := r.store.LoadDue(ctx, a.Org, a.Delivery)
	if errors.Is(err, store.ErrNotFound) {
		return nil // its endpoint was deleted
	}
	if err != nil {
		return err
	}
	if due.Status != store.StatusPending || due.Round != a.Round || due.AttemptCount >= a.Attempt {
		return nil // done, retried again, or this attempt was already made
	}
	if due.Disabled {
		return store.GiveUp(ctx, r.store.Pool(), a.Org, a.Delivery, a.Round)
	}
	if !r.inFlight.acquire(due.EndpointID) {
		return river.JobSnooze(busyWait)
	}
	o := r.post(ctx, a.Delivery, due)
	r.inFlight.release(due.EndpointID)
	if !o.Succeeded() {
		if next, ok := r.schedule.after(a.Attempt, o.At); ok {
			o.Next = &next
		}
	}
	return r.record(ctx, a, due, o)
}

// post sends the delivery once and says how it went.
func (r *Runner) post(ctx context.Context, id uuid.UUID, due store.Due) store.Outcome {
	start := time.Now()
	o := store.Outcome{At: start}
	fail := func(msg string) store.Outcome {
		o.Duration = time.Since(start)
		o.Error = &msg
		return o
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, due.URL, bytes.NewReader(due.Payload))
	if err != nil {
		return fail("invalid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	signature.SetHeaders(req.Header, due.Key, id.String(), start, due.Payload)
	resp, err := r.http.Do(req)
	if err != nil {
		return fail(describe(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	_ = resp.Body.Close()
	code := int32(resp.StatusCode)
	o.StatusCode = &code
	o.Duration = time.Since(start)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail("HTTP " + strconv.Itoa(resp.StatusCode))
	}
	return o
}

// describe is an attempt's error as the owner may read it: no internal detail.
func describe(err error) string {
	switch {
	case errors.Is(err, egress.ErrForbiddenAddress):
		return "refused: the endpoint resolves to an address that is not public"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "timed out"
	default:
		return "connection failed"
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// record stores the outcome, the endpoint's health (a success ends a failing streak) and the
// next attempt in one transaction.
func (r *Runner) record(ctx context.Context, a attemptArgs, due store.Due, o store.Outcome) error {
	endpoint := due.EndpointID
	tx, err := r.store.Pool().Begin(ctx)
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	recorded, err := store.RecordAttempt(ctx, tx, a.Org, a.Delivery, a.Round, a.Attempt, o)
	if err != nil || !recorded {
		return err
	}
	switch {
	case o.Succeeded() && due.Failing:
		err = store.EndpointHealthy(ctx, tx, a.Org, endpoint)
	case !o.Succeeded():
		var disabled bool
		disabled, err = store.EndpointFailed(ctx, tx, a.Org, endpoint, o.At, r.disableAfter, *o.Error)
		if disabled && r.log != nil {
			r.log.Warn("webhooks: endpoint disabled", "org", a.Org, "endpoint", endpoint)
		}
	}
	if err != nil {
		return err
	}
	if o.Next != nil {
		next := a
		next.Attempt++
		if _, err := r.InsertTx(ctx, tx, next, jobs.At(*o.Next)); err != nil {
			return fmt.Errorf("schedule attempt: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	return nil
}
