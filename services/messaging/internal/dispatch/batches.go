package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/batch"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/clients/billing"
	"github.com/chorus-sms/chorus/pkg/outbox"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// The dispatch jobs running at once share their round trips: each step of a queued message's
// dispatch (read, consent check, hold post, claim, recording the carrier's acceptance) goes
// through a batcher, so that under load one statement or call serves up to batchMax messages
// instead of one. Each message still takes every step, in the same order, as its own. One
// run of a step at a time: the messages arriving while it runs make up the next batch, where a
// second run in parallel took them a few at a time, each batch paying a statement's or a
// call's fixed cost.
const (
	batchMax     = 500
	batchRuns    = 1
	batchTimeout = 30 * time.Second
)

// batches are the dispatcher's batched steps.
type batches struct {
	load    *batch.Batcher[uuid.UUID, loaded]
	consent *batch.Batcher[store.Message, consentAnswer]
	caps    *batch.Batcher[store.Message, capAnswer]
	post    *batch.Batcher[store.Message, postAnswer]
	claim   *batch.Batcher[store.ClaimRequest, bool]
	accept  *batch.Batcher[accepted, struct{}]
}

func newBatches(d *Dispatcher) batches {
	return batches{
		load:    batch.New(d.loadQueued, batchMax, batchRuns, batchTimeout),
		consent: batch.New(d.checkConsent, batchMax, batchRuns, batchTimeout),
		caps:    batch.New(d.checkCaps, batchMax, batchRuns, batchTimeout),
		post:    batch.New(d.postHolds, batchMax, batchRuns, batchTimeout),
		claim:   batch.New(d.store.ClaimMany, batchMax, batchRuns, batchTimeout),
		accept:  batch.New(d.recordAcceptedMany, batchMax, batchRuns, batchTimeout),
	}
}

// loaded is a queued message as read for dispatch; found is false when it is gone.
type loaded struct {
	q     store.Queued
	found bool
}

func (d *Dispatcher) loadQueued(ctx context.Context, ids []uuid.UUID) ([]loaded, error) {
	byID, err := d.store.QueuedMessages(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]loaded, len(ids))
	for i, id := range ids {
		q, ok := byID[id]
		out[i] = loaded{q: q, found: ok}
	}
	return out, nil
}

// consentAnswer is contacts' answer for one message's recipient (see refusal).
type consentAnswer struct {
	reason contactsv1.SendableReason
	err    error
}

// checkConsent asks contacts about the recipients of msgs, one call per organization, and
// answers each message as refusal does. A recipient whose STOP is being handled is refused
// before contacts is asked (stops.go): the marks are read first, so a check that misses a
// mark began before the STOP arrived or reads contacts after the opt-out was recorded.
func (d *Dispatcher) checkConsent(ctx context.Context, msgs []store.Message) ([]consentAnswer, error) {
	out := make([]consentAnswer, len(msgs))
	marked, err := d.stopMarked(ctx, msgs)
	if err != nil {
		for i := range out {
			out[i].err = err
		}
		return out, nil
	}
	for org, idx := range byOrg(msgs) {
		phones := make([]string, len(idx))
		for j, i := range idx {
			phones[j] = msgs[i].ContactPhone
		}
		results, err := d.contacts.CheckSendable(ctx, org, phones)
		if err == nil && len(results) != len(phones) {
			err = fmt.Errorf("contacts answered %d of %d phones", len(results), len(phones))
		}
		for j, i := range idx {
			if marked[i] {
				out[i].reason = contactsv1.SendableReason_SENDABLE_REASON_OPTED_OUT
				continue
			}
			if err != nil {
				out[i].err = fmt.Errorf("check sendable: %w", err)
				continue
			}
			out[i].reason = sendableReason(msgs[i], results[j])
		}
	}
	return out, nil
}

// postAnswer is billing's answer to one message's post against its campaign's hold: a code
// when billing refused it (the message then fails), an error when billing did not answer.
type postAnswer struct {
	code string
	err  error
}

// postHolds debits msgs against the holds they name, one call per organization. Posting is
// idempotent per message, so a retried dispatch posts once.
func (d *Dispatcher) postHolds(ctx context.Context, msgs []store.Message) ([]postAnswer, error) {
	out := make([]postAnswer, len(msgs))
	for org, idx := range byOrg(msgs) {
		posts := make([]billing.Post, len(idx))
		for j, i := range idx {
			posts[j] = billing.Post{HoldID: msgs[i].HoldID, MessageID: msgs[i].ID, Credits: msgs[i].Credits}
		}
		refused, err := d.billing.PostHolds(ctx, org, posts)
		for j, i := range idx {
			switch {
			case err != nil:
				out[i].err = fmt.Errorf("post message %s to hold %s: %w", msgs[i].ID, msgs[i].HoldID, err)
			case refused[j] == apierr.ReasonBillingSuspended:
				// As before batching: a suspended account's message waits for the job's retry.
				out[i].err = fmt.Errorf("post message %s to hold %s: %w", msgs[i].ID, msgs[i].HoldID, &clients.Error{Reason: refused[j]})
			default:
				out[i].code = refused[j]
			}
		}
	}
	return out, nil
}

// byOrg groups the indexes of msgs by organization.
func byOrg(msgs []store.Message) map[uuid.UUID][]int {
	groups := map[uuid.UUID][]int{}
	for i, m := range msgs {
		groups[m.OrgID] = append(groups[m.OrgID], i)
	}
	return groups
}

// accepted is a claimed message its carrier took.
type accepted struct {
	m        store.Message
	provider string
	acc      carrier.Accepted
}

// recordAcceptedMany moves messages the carriers took to "sent" in one transaction, with their
// events and, for the sandbox, their scheduled reports: a report exists exactly when the
// acceptance is recorded. A message posted to its campaign's hold before it was claimed is
// settled in the same statement; one with a hold of its own is settled after (settle).
func (d *Dispatcher) recordAcceptedMany(ctx context.Context, in []accepted) ([]struct{}, error) {
	accs := make([]store.Acceptance, len(in))
	for i, a := range in {
		accs[i] = store.Acceptance{ID: a.m.ID, ProviderMessageID: a.acc.ProviderMessageID, DispatchedAt: a.m.DispatchedAt, Settled: !ownHold(a.m)}
	}
	var moved map[uuid.UUID]bool
	now := time.Now()
	err := d.store.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if moved, err = d.store.AcceptMany(ctx, tx, accs, now); err != nil {
			return err
		}
		var changes []statusChange
		var sandboxed []accepted
		var taken []store.Message
		for _, a := range in {
			if !moved[a.m.ID] {
				continue
			}
			taken = append(taken, a.m)
			changes = append(changes, statusChange{a.m, carrier.Status{ProviderMessageID: a.acc.ProviderMessageID, Status: carrier.StatusSent}})
			if a.provider == carrier.SandboxName {
				sandboxed = append(sandboxed, a)
			}
		}
		if err := outbox.EnqueueMany(ctx, tx, statusEvents(changes)); err != nil {
			return err
		}
		if err := d.store.CountSent(ctx, tx, taken); err != nil {
			return err
		}
		if len(sandboxed) > 0 {
			if _, err := d.river.InsertManyTx(ctx, tx, sandboxReports(sandboxed, now, d.delay)); err != nil {
				return fmt.Errorf("schedule sandbox reports: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, a := range in {
		if moved[a.m.ID] && ownHold(a.m) {
			if err := d.settle(ctx, a.m, carrier.StatusSent); err != nil {
				d.log.WarnContext(ctx, "settle credits failed; the reconciler repeats it", "message", a.m.ID, "err", err)
			}
		}
	}
	return make([]struct{}, len(in)), nil
}

// ownHold says m's credits are reserved under a hold of its own, which settle posts and
// releases once the carrier took it.
func ownHold(m store.Message) bool {
	return m.Billable && m.HoldID == m.ID.String()
}
