package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/jobs"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// CodeOutcomeUnknown is stored on a message that stayed "sending" past the sending timeout:
// its process died before the carrier call, or the carrier's answer was lost and no status
// callback came.
//
// Such a message is failed and its credits returned, and since statuses only move forward a
// later callback (even "delivered") changes nothing: we favour the customer, who is not
// charged for a message whose fate we do not know.
const CodeOutcomeUnknown = apierr.ReasonCarrierOutcomeUnknown

// Stuck messages are failed in batches, oldest first, so a backlog after an outage is worked
// through without one huge query.
const reconcileBatch = 500

// queueReconcile keeps sweeps from waiting behind queued sends; one runs at a time.
const queueReconcile = "reconcile"

// reconcileInterval is how often stuck messages are swept: every minute, or twice per timeout
// when it is shorter, so a message is failed at most half a timeout late.
func reconcileInterval(timeout time.Duration) time.Duration {
	return min(time.Minute, timeout/2)
}

// reconcilePeriodicJob schedules the sweep, one replica working each.
func reconcilePeriodicJob(timeout time.Duration) *river.PeriodicJob {
	return jobs.Sweep(reconcileInterval(timeout), reconcileArgs{})
}

// reconcileArgs is one sweep of messages stuck in "sending" or left unsettled.
type reconcileArgs struct{}

func (reconcileArgs) Kind() string { return "messaging.reconcile_sending" }

// InsertOpts makes it a sweep: one at a time, never retried (the next one does its work).
func (reconcileArgs) InsertOpts() river.InsertOpts { return jobs.SweepInsertOpts(queueReconcile) }

type reconcileWorker struct {
	river.WorkerDefaults[reconcileArgs]
	d       *Dispatcher
	timeout time.Duration
}

// Work fails messages stuck in "sending", then settles the credits of messages whose settle
// did not complete when they left "sending" (billing unavailable at the time).
func (w *reconcileWorker) Work(ctx context.Context, _ *river.Job[reconcileArgs]) error {
	stuckErr := w.d.failStuckSending(ctx, time.Now().Add(-w.timeout))
	if err := w.d.settleMissed(ctx, time.Now().Add(-reconcileInterval(w.timeout))); err != nil {
		return errors.Join(stuckErr, err)
	}
	return stuckErr
}

// failStuckSending fails every message claimed before cutoff that is still "sending". One
// that cannot be failed now is skipped and tried again by the next sweep; the first such
// error is returned once the others are done.
func (d *Dispatcher) failStuckSending(ctx context.Context, cutoff time.Time) error {
	var after *store.SendingKey
	var firstErr error
	for {
		batch, err := d.store.StuckSending(ctx, cutoff, after, reconcileBatch)
		if err != nil {
			return err
		}
		for _, m := range batch {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("reconcile sending messages: %w", err)
			}
			if err := d.expireSending(ctx, m.ID, cutoff); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("reconcile sending message %s: %w", m.ID, err)
			}
		}
		if len(batch) < reconcileBatch {
			return firstErr
		}
		last := batch[len(batch)-1]
		after = &store.SendingKey{CreatedAt: last.CreatedAt, ID: last.ID}
	}
}

// expireSending fails one stuck message as advance would (status moved forward, event
// published in the same transaction, its hold released with nothing consumed), but only if it
// is still "sending" from a claim before cutoff once locked: a carrier answer or callback that
// came in meanwhile wins.
func (d *Dispatcher) expireSending(ctx context.Context, id uuid.UUID, cutoff time.Time) error {
	ctx = context.WithoutCancel(ctx) // a message failed here must get its hold released
	s := carrier.Status{Status: carrier.StatusFailed, ErrorCode: CodeOutcomeUnknown}
	_, err := d.advanceWith(ctx, s, func(tx pgx.Tx, c store.StatusChange) (store.Message, bool, error) {
		before, changed, err := d.store.ExpireSending(ctx, tx, id, cutoff, c)
		if changed {
			claimed := before.CreatedAt
			if before.StatusAt != nil {
				claimed = *before.StatusAt
			}
			d.log.WarnContext(ctx, "message stayed sending past the sending timeout; failed, not charged",
				"message", id, "org", before.OrgID, "claimed_at", claimed, "code", CodeOutcomeUnknown)
		}
		return before, changed, err
	})
	return err
}

// settleMissed settles the credits of messages whose settle billing refused or missed when
// they reached their status before cutoff: debited if the carrier took them, refunded if they
// failed.
// A message billing keeps refusing is logged and passed over, so it cannot hold back the ones
// after it in its page; the sweep reports the first failure.
func (d *Dispatcher) settleMissed(ctx context.Context, cutoff time.Time) error {
	var first error
	for {
		batch, err := d.store.Unsettled(ctx, cutoff, reconcileBatch)
		if err != nil {
			return errors.Join(first, err)
		}
		for _, m := range batch {
			if err := d.settle(ctx, m, m.Status); err != nil {
				d.log.ErrorContext(ctx, "settling a message's credits failed again", "message", m.ID, "org", m.OrgID, "err", err)
				if first == nil {
					first = fmt.Errorf("settle message %s again: %w", m.ID, err)
				}
			}
		}
		// Settled messages leave the list, so the next page is what follows them; after a
		// failure the same page would come again, and the next sweep takes it.
		if len(batch) < reconcileBatch || first != nil || ctx.Err() != nil {
			return first
		}
	}
}
