package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
// its process died around the carrier call, or the carrier's answer was lost, and neither a
// status callback nor the carrier, asked (resolveUnknown), could say what became of it.
//
// Such a message is failed and its credits returned, and since statuses only move forward a
// later callback (even "delivered") changes nothing: we favour the customer, who is not
// charged for a message whose fate we do not know.
const CodeOutcomeUnknown = apierr.ReasonCarrierOutcomeUnknown

// DefaultCallTimeout bounds one hand-off to the carrier when the config sets none.
const DefaultCallTimeout = 10 * time.Second

// Stuck messages are failed in batches, oldest first, so a backlog after an outage is worked
// through without one huge query.
const reconcileBatch = 500

// lookupWorkers is how many carrier lookups one sweep makes at once.
const lookupWorkers = 8

// carrierClockSkew widens the time range a lookup asks the carrier about, for the difference
// between our database's clock (claims) and the carrier's (its messages' creation).
const carrierClockSkew = time.Minute

// queueReconcile keeps sweeps from waiting behind queued sends; one runs at a time.
const queueReconcile = "reconcile"

// reconcileInterval is how often stuck messages are swept: every minute, or twice per timeout
// or lookup window when shorter, so a message is looked up or failed at most half of it late.
func reconcileInterval(timeout, lookupAfter time.Duration) time.Duration {
	return min(time.Minute, timeout/2, lookupAfter/2)
}

// reconcilePeriodicJob schedules the sweep, one replica working each.
func reconcilePeriodicJob(timeout, lookupAfter time.Duration) *river.PeriodicJob {
	return jobs.Sweep(reconcileInterval(timeout, lookupAfter), reconcileArgs{})
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

// Work asks the carriers about messages stuck in "sending" past the lookup window (sent if
// the carrier has them, queued again if not), fails those still stuck past the sending
// timeout, then settles the credits of messages whose settle did not complete when they left
// "sending" (billing unavailable at the time).
func (w *reconcileWorker) Work(ctx context.Context, _ *river.Job[reconcileArgs]) error {
	now := time.Now()
	lookupErr := w.d.resolveUnknown(ctx, now.Add(-w.d.lookupAfter()))
	stuckErr := w.d.failStuckSending(ctx, now.Add(-w.timeout))
	settleErr := w.d.settleMissed(ctx, now.Add(-reconcileInterval(w.timeout, w.d.lookupAfter())))
	return errors.Join(lookupErr, stuckErr, settleErr)
}

// lookupAfter is how long after its claim a message still "sending" is looked up at its
// carrier: twice the call timeout. A hand-off starts right after the claim (its throttle slot
// is at most throttleLead ahead) and is abandoned at the call timeout (callDeadline), so by
// then no request for the message can still reach the carrier; the second half is margin for
// the steps between claim and call and for a carrier that shows a message it took a moment
// late.
func (d *Dispatcher) lookupAfter() time.Duration {
	return 2 * d.callTimeout
}

// callDeadline is when the hand-off of claimed message m to its carrier is abandoned: the
// call timeout after its throttle slot (which is at most throttleLead after the claim), or
// after now when that is earlier, so a process that stalled since the claim does not call the
// carrier late.
func (d *Dispatcher) callDeadline(m store.Message) time.Time {
	from := time.Now()
	if m.DispatchedAt != nil && m.DispatchedAt.Before(from) {
		from = *m.DispatchedAt
	}
	return from.Add(d.callTimeout)
}

// resolveUnknown settles every message claimed before cutoff and still "sending" by asking
// its carrier: one the carrier has is recorded sent under the carrier's id (and its credits
// settled, once), one it does not have is put back in the queue and sent again. One the
// carrier cannot answer about now is left for the next sweep, and failed at the sending
// timeout (failStuckSending) if it never can; the first such error is returned.
func (d *Dispatcher) resolveUnknown(ctx context.Context, cutoff time.Time) error {
	var after *store.SendingKey
	var mu sync.Mutex
	var firstErr error
	for {
		batch, err := d.store.StuckSending(ctx, cutoff, after, reconcileBatch)
		if err != nil {
			return err
		}
		work := make(chan store.Message)
		var wg sync.WaitGroup
		for range lookupWorkers {
			wg.Go(func() {
				for m := range work {
					if err := d.resolveOne(ctx, m, cutoff); err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("look up sending message %s: %w", m.ID, err)
						}
						mu.Unlock()
					}
				}
			})
		}
		for _, m := range batch {
			if ctx.Err() != nil {
				break
			}
			work <- m
		}
		close(work)
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return errors.Join(firstErr, fmt.Errorf("look up sending messages: %w", err))
		}
		if len(batch) < reconcileBatch {
			return firstErr
		}
		last := batch[len(batch)-1]
		after = &store.SendingKey{CreatedAt: last.CreatedAt, ID: last.ID}
	}
}

// resolveOne asks m's carrier whether it took m, and records what it says.
func (d *Dispatcher) resolveOne(ctx context.Context, m store.Message, cutoff time.Time) error {
	p, err := d.provider(m.Provider)
	if err != nil {
		return err
	}
	claimed := m.CreatedAt
	if m.StatusAt != nil {
		claimed = *m.StatusAt
	}
	since, until := claimed.Add(-carrierClockSkew), claimed.Add(d.lookupAfter()+carrierClockSkew)
	lookCtx, cancel := context.WithTimeout(ctx, d.callTimeout)
	cands, err := p.Find(lookCtx, carrier.Lookup{
		MessageID: m.ID.String(), From: m.OurNumber, To: m.ContactPhone, Since: since, Until: until,
	})
	cancel()
	if err != nil {
		return err
	}
	found, ok, err := d.ours(ctx, m, p.Name(), cands, since, until)
	if err != nil {
		return err
	}
	if !ok {
		return d.requeueUnsent(ctx, m, cutoff)
	}
	return d.recordFound(ctx, m, found, cutoff)
}

// ours picks the carrier's message that is m among cands: not one whose carrier id another of
// our messages has recorded, the one with m's text if there is one, else the earliest left
// whose text is not that of another of our messages to the same contact (a carrier may
// rewrite a text, e.g. smart quotes to plain ones, so a different text is not proof; another
// message's exact text is). When in doubt it takes one: a message wrongly taken for sent
// costs its recipient one text, a message wrongly sent again texts them twice.
func (d *Dispatcher) ours(ctx context.Context, m store.Message, provider string, cands []carrier.Candidate, since, until time.Time) (carrier.Candidate, bool, error) {
	if len(cands) == 0 {
		return carrier.Candidate{}, false, nil
	}
	sids := make([]string, len(cands))
	var others []string
	for i, c := range cands {
		sids[i] = c.ProviderMessageID
		if c.Body != m.Body {
			others = append(others, c.Body)
		}
	}
	taken, err := d.store.TakenCarrierIDs(ctx, provider, sids)
	if err != nil {
		return carrier.Candidate{}, false, err
	}
	theirs := map[string]bool{}
	if len(others) > 0 {
		if theirs, err = d.store.BodiesOfOthers(ctx, m, since, until, others); err != nil {
			return carrier.Candidate{}, false, err
		}
	}
	var pick *carrier.Candidate
	for i := range cands {
		c := &cands[i]
		switch {
		case taken[c.ProviderMessageID]:
		case c.Body == m.Body:
			return *c, true, nil
		case theirs[c.Body]:
		case pick == nil || c.CreatedAt.Before(pick.CreatedAt):
			pick = c
		}
	}
	if pick == nil {
		return carrier.Candidate{}, false, nil
	}
	return *pick, true, nil
}

// recordFound records that the carrier took m as c: "sent" under the carrier's id, settled
// as any acceptance is (credits posted once; billing's post is idempotent per message), then
// any later status the carrier reports, as its callback would. Only if m is still stuck: a
// callback that came in meanwhile wins.
func (d *Dispatcher) recordFound(ctx context.Context, m store.Message, c carrier.Candidate, cutoff time.Time) error {
	ctx = context.WithoutCancel(ctx) // a message recorded sent must get its credits settled
	sent := carrier.Status{Status: carrier.StatusSent, ProviderMessageID: c.ProviderMessageID}
	changed, err := d.advanceWith(ctx, sent, func(tx pgx.Tx, sc store.StatusChange) (store.Message, bool, error) {
		return d.store.AdvanceStuck(ctx, tx, m.ID, cutoff, sc)
	})
	if err != nil || !changed {
		return err
	}
	d.log.WarnContext(ctx, "the carrier has a message whose hand-off was lost; recorded sent",
		"message", m.ID, "org", m.OrgID, "carrier_id", c.ProviderMessageID, "carrier_status", c.Status)
	switch c.Status {
	case carrier.StatusDelivered, carrier.StatusUndelivered, carrier.StatusFailed:
		return d.advance(ctx, m.ID, carrier.Status{Status: c.Status, ProviderMessageID: c.ProviderMessageID})
	}
	return nil
}

// requeueUnsent puts m, which its carrier does not have, back in the queue with a dispatch job
// of its own, in one transaction: the same row, so its dedupe key still stands for it, and it
// takes every dispatch step again (quiet hours, its source's state, consent, credits, throttle).
func (d *Dispatcher) requeueUnsent(ctx context.Context, m store.Message, cutoff time.Time) error {
	var requeues int
	err := d.store.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if requeues, err = d.store.Requeue(ctx, tx, m.ID, cutoff); err != nil || requeues == 0 {
			return err
		}
		if _, err := d.river.InsertTx(ctx, tx, sendArgs{MessageID: m.ID, OrgID: m.OrgID, Requeue: requeues}, nil); err != nil {
			return fmt.Errorf("queue dispatch again: %w", err)
		}
		return nil
	})
	if err == nil && requeues > 0 {
		d.log.WarnContext(ctx, "the carrier does not have a message whose hand-off was lost; queued again",
			"message", m.ID, "org", m.OrgID, "requeues", requeues)
	}
	return err
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
		before, changed, err := d.store.AdvanceStuck(ctx, tx, id, cutoff, c)
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
