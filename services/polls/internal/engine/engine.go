// Package engine runs polls as River jobs and from events. A start stores the audience as
// not_started participants (contacts' keyset batches, each contact once), places one billing
// hold for every participant's intro and costliest question path, then begins the
// participants: each begun participant's step 1 (the intro and question 1) is a step job.
// A reply (messaging's message.received) is handled in the consumer's transaction: the answer
// stored, the participant moved on, and the next step's job inserted in that same
// transaction, so a crash between a reply and its question neither skips nor repeats it.
//
// A step job sends what the participant's stored step says, under dedupe keys
// "poll:<poll>:<contact>:<step>:<part>", so a retried, duplicated or rescued job never sends
// twice. Everything starts from what is stored: a resume or restart re-queues the steps that
// were never handed to messaging.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/pkg/clients/messaging"
	"github.com/chorus-sms/chorus/pkg/jobs"
	"github.com/chorus-sms/chorus/pkg/service"
	"github.com/chorus-sms/chorus/services/polls/internal/store"
)

// SourceKind is what messaging attributes a poll's messages (and replies to them) to.
const SourceKind = "poll"

// Config holds what the runner needs.
type Config struct {
	Pool   *pgxpool.Pool
	Schema string
	Store  *store.Store
	Peers  service.Peers // orgs, contacts, billing and messaging
	Logger *slog.Logger
	// Hour is how long one of a poll's participantTimeoutHours lasts (CHORUS_POLL_HOUR); 0
	// means an hour (shorter only for demonstrations and tests).
	Hour time.Duration
	// SweepEvery is how often silent participants are looked for; 0 means a minute.
	SweepEvery time.Duration
}

// Runner owns the polls' jobs; its River client's Start and Stop are the runner's.
type Runner struct {
	*jobs.Client
	store *store.Store
	peers service.Peers
	log   *slog.Logger
	hour  time.Duration
	now   func() time.Time
}

// New builds the runner and its River client; Start begins working jobs.
func New(cfg Config) (*Runner, error) {
	r := &Runner{store: cfg.Store, peers: cfg.Peers,
		log: cmp.Or(cfg.Logger, slog.Default()), hour: cmp.Or(cfg.Hour, time.Hour), now: func() time.Time { return time.Now().UTC() }}
	var err error
	r.Client, err = jobs.NewClient("polls", cfg.Pool, cfg.Schema, r.log, jobs.PollEvery(100*time.Millisecond),
		jobs.Queue(river.QueueDefault, 8), jobs.Queue(stepQueue, stepWorkers), jobs.Queue(sweepQueue, 1),
		jobs.Periodic(jobs.Sweep(cmp.Or(cfg.SweepEvery, time.Minute), sweepArgs{})),
		jobs.Work(&startWorker{r: r}), jobs.Work(&stepWorker{r: r}), jobs.Work(&finishWorker{r: r}), jobs.Work(&sweepWorker{r: r}))
	if err != nil {
		return nil, err
	}
	return r, nil
}

// StartTx queues p's start (or, on a resume, its catch-up) at at, inside tx.
func (r *Runner) StartTx(ctx context.Context, tx pgx.Tx, p *store.Poll, at time.Time) error {
	_, err := r.InsertTx(ctx, tx, startArgs{PollID: p.ID, OrgID: p.OrgID, Run: p.Run}, jobs.At(at))
	if err != nil {
		return fmt.Errorf("queue poll start: %w", err)
	}
	return nil
}

// CloseTx completes p (active, paused or scheduled) inside tx: participants in progress are
// terminated (each freed contact begins a poll it waits for), and the finish job releases
// the rest of the hold, first withdrawing the poll's queued messages when cancel is set.
func (r *Runner) CloseTx(ctx context.Context, tx pgx.Tx, org, poll uuid.UUID, cancel bool) error {
	now := r.now()
	tag, err := tx.Exec(ctx, `UPDATE polls SET status = 'completed', completed_at = $3, updated_at = $3
		WHERE organization_id = $1 AND id = $2 AND status IN ('active', 'paused', 'scheduled')`, org, poll, now)
	if err != nil {
		return fmt.Errorf("close poll: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	ended, err := r.store.TerminatePoll(ctx, tx, org, poll, now)
	if err != nil {
		return err
	}
	if err := r.freedTx(ctx, tx, org, ended); err != nil {
		return err
	}
	return r.finishTx(ctx, tx, org, poll, cancel)
}

// finishTx publishes the poll's completion and queues the release of its hold's rest, in the
// transaction that completed it.
func (r *Runner) finishTx(ctx context.Context, tx pgx.Tx, org, poll uuid.UUID, cancel bool) error {
	if err := store.PublishCompleted(ctx, tx, org, poll, r.now()); err != nil {
		return err
	}
	if _, err := r.InsertTx(ctx, tx, finishArgs{PollID: poll, OrgID: org, Cancel: cancel}, nil); err != nil {
		return fmt.Errorf("queue poll finish: %w", err)
	}
	return nil
}

// stepsTx queues the step jobs of begun participants, inside tx.
func (r *Runner) stepsTx(ctx context.Context, tx pgx.Tx, begun []store.Begun) error {
	if len(begun) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(begun))
	for i, b := range begun {
		params[i] = river.InsertManyParams{Args: stepArgs{ParticipantID: b.Participant, OrgID: b.Org, Step: b.Step}}
	}
	if _, err := r.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("queue poll steps: %w", err)
	}
	return nil
}

// freedTx begins, for each contact whose participation in progress ended, the poll it waits
// for (one poll at a time per contact), and completes the ended participations' polls that
// have nobody left to hear from.
func (r *Runner) freedTx(ctx context.Context, tx pgx.Tx, org uuid.UUID, ended []store.Ended) error {
	polls := map[uuid.UUID]bool{}
	for _, e := range ended {
		polls[e.Poll] = true
		if e.Was != store.InProgress {
			continue
		}
		begun, err := r.store.BeginWaiting(ctx, tx, org, e.Contact, r.now())
		if err != nil {
			return err
		}
		if err := r.stepsTx(ctx, tx, begun); err != nil {
			return err
		}
	}
	for poll := range polls {
		if err := r.finishIfDoneTx(ctx, tx, org, poll); err != nil {
			return err
		}
	}
	return nil
}

// finishIfDoneTx completes an active poll once every participant completed or was
// terminated, and queues the release of its hold's rest (the outros still queued carry no
// hold, so nothing is withdrawn).
func (r *Runner) finishIfDoneTx(ctx context.Context, tx pgx.Tx, org, poll uuid.UUID) error {
	done, err := r.store.Finished(ctx, tx, org, poll, r.now())
	if err != nil || !done {
		return err
	}
	return r.finishTx(ctx, tx, org, poll, false)
}

// errSkip ends a job with nothing to do (the poll or participant moved on).
var errSkip = errors.New("nothing to do")

// finishArgs releases what is left of a completed poll's hold, after withdrawing its queued
// messages when Cancel (a manual close). Both are idempotent, so it is unique per poll.
type finishArgs struct {
	PollID uuid.UUID `json:"poll_id" river:"unique"`
	OrgID  uuid.UUID `json:"organization_id"`
	Cancel bool      `json:"cancel"`
}

func (finishArgs) Kind() string { return "polls.finish" }

func (finishArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type finishWorker struct {
	river.WorkerDefaults[finishArgs]
	r *Runner
}

func (w *finishWorker) Work(ctx context.Context, job *river.Job[finishArgs]) error {
	a := job.Args
	if a.Cancel {
		if err := w.r.peers.Messaging.SetSourceState(ctx, a.OrgID, SourceKind, a.PollID.String(), messaging.SourceCanceled); err != nil {
			return fmt.Errorf("poll %s: withdraw queued messages: %w", a.PollID, err)
		}
	}
	p, err := w.r.store.Get(ctx, a.OrgID, a.PollID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("poll %s: %w", a.PollID, err)
	}
	if p.HeldCredits == 0 {
		return nil
	}
	if err := w.r.peers.Billing.ReleaseHold(ctx, a.OrgID, a.PollID.String()); err != nil {
		return fmt.Errorf("poll %s: release hold: %w", a.PollID, err)
	}
	return nil
}
