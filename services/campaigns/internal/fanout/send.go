package fanout

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/audience"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/mergefields"
	"github.com/chorus-sms/chorus/pkg/quiethours"
	"github.com/chorus-sms/chorus/pkg/route"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/shortlinks"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

// Batch sizes: contacts per audience response and messages per SendMessages call, the
// maximum of each (fewer round trips and status checks per recipient).
const (
	audienceBatch = 1000
	queueBatch    = 1000
	// queueInFlight is how many SendMessages calls one queue keeps going at once, and
	// resolveInFlight how many batches of recipients one resolve writes (and hands to
	// messaging) at once: 4 fanned out 200,000 contacts in 3.0-3.5 s, 2 in 3.2-3.6 s.
	queueInFlight   = 2
	resolveInFlight = 4
)

// SourceKind is what messaging attributes a campaign's messages (and replies to them) to.
const SourceKind = "campaign"

// errStopped ends a run whose campaign left the stage it works on (paused, canceled, another
// submission): nothing is wrong, a later job (resume) continues.
var errStopped = errors.New("campaign stopped")

// send runs one submission's send from wherever the campaign is.
func (r *Runner) send(ctx context.Context, a sendArgs) error {
	c, err := r.store.Get(ctx, a.OrgID, a.CampaignID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.Submission != a.Submission {
		return nil // an earlier submission's job (canceled back to draft, submitted again)
	}
	if c.Status == store.StatusScheduled {
		if ok, err := r.store.Begin(ctx, c.OrgID, c.ID, c.Submission); err != nil || !ok {
			return err
		}
		c.Status = store.StatusPending
	}
	stage := c.Status
	if stage == store.StatusPaused || stage == store.StatusCompleted || stage == store.StatusFailed || stage == store.StatusDraft {
		return nil
	}
	o, err := r.peers.Orgs.Organization(ctx, c.OrgID)
	if err != nil {
		return fmt.Errorf("organization: %w", err)
	}
	err = r.run(ctx, &c, o.GetSandbox(), o.GetTimezone())
	if errors.Is(err, errStopped) {
		return nil
	}
	return err
}

// giveUp fails a submission whose send job ran out of attempts (a peer or the database kept
// failing), releasing its hold, so that it does not stay pending or queued for ever.
func (r *Runner) giveUp(ctx context.Context, a sendArgs, cause error) error {
	c, err := r.store.Get(ctx, a.OrgID, a.CampaignID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.Submission != a.Submission {
		return nil
	}
	r.log.ErrorContext(ctx, "campaign send gave up", "campaign", c.ID, "error", cause)
	if err := r.fail(ctx, &c, apierr.ReasonUnavailable); !errors.Is(err, errStopped) {
		return err
	}
	return nil
}

func (r *Runner) run(ctx context.Context, c *store.Campaign, sandbox bool, orgZone string) error {
	if c.Status == store.StatusPending {
		if !c.AudienceResolved {
			if err := r.resolve(ctx, c, sandbox, orgZone); err != nil {
				return err
			}
		}
		total, estimate, err := r.store.ResolveAudience(ctx, c.OrgID, c.ID)
		if err != nil {
			return err
		}
		if c.IsAbTest {
			if estimate, err = r.drawSamples(ctx, c); err != nil {
				return err
			}
		}
		held := int32(0)
		if !sandbox && total > 0 && estimate > 0 {
			reason, err := r.hold(ctx, c, estimate)
			if err != nil {
				return err
			}
			if reason != "" {
				return r.fail(ctx, c, reason)
			}
			held = estimate
		}
		ok, err := r.held(ctx, c, held)
		if err != nil {
			return err
		}
		if !ok {
			return r.afterLostAdvance(ctx, c, held)
		}
		c.Status = store.StatusQueued
		if held > 0 {
			c.HeldCredits = held
		}
	}
	if c.Status == store.StatusQueued {
		// An A/B test queues its samples only; its rest waits for the winner.
		if err := r.queue(ctx, c, orgZone, store.StatusQueued, c.IsAbTest); err != nil {
			return err
		}
		if c.IsAbTest {
			if err := r.scheduleDecision(ctx, c); err != nil {
				return err
			}
		}
		ok, err := r.store.Advance(ctx, c.OrgID, c.ID, store.StatusQueued, store.StatusSending, 0)
		if err != nil || !ok {
			return err
		}
		c.Status = store.StatusSending
	}
	if c.IsAbTest && c.Status == store.StatusSending {
		if err := r.sendRest(ctx, c, orgZone); err != nil {
			return err
		}
	}
	// Every message may already have an outcome (the events came first).
	return r.store.InTx(ctx, func(tx pgx.Tx) error { return r.completeTx(ctx, tx, c.OrgID, c.ID) })
}

// held moves the campaign from pending to queued once its hold is placed and, unless it is
// paused, releases the bulk hand-off resolve opened: messaging creates the messages of the
// audience it was handed while the audience was resolved (held back until then), under the campaign's row lock so that a pause or
// cancel committed after it tells messaging after it. It reports whether the campaign was
// pending.
func (r *Runner) held(ctx context.Context, c *store.Campaign, credits int32) (moved bool, err error) {
	err = r.store.InTx(ctx, func(tx pgx.Tx) error {
		var status string
		moved, status, err = r.store.AdvanceTx(ctx, tx, c.OrgID, c.ID, store.StatusPending, store.StatusQueued, credits)
		if err != nil || !moved || status == store.StatusPaused {
			return err
		}
		return r.peers.Messaging.ReleaseBulk(ctx, c.OrgID, SourceKind, c.ID.String())
	})
	return moved, err
}

// afterLostAdvance handles a campaign that left pending while this run placed its hold: a
// second run (a resume while this one wound down) advanced it, and the hold is its hold too;
// or it was canceled, and the hold this run placed after the cancel is given back (the
// cancel's release saw no credits held).
func (r *Runner) afterLostAdvance(ctx context.Context, c *store.Campaign, held int32) error {
	if held == 0 {
		return errStopped
	}
	now, err := r.store.Get(ctx, c.OrgID, c.ID)
	if err != nil {
		return err
	}
	if now.Status != store.StatusCompleted && now.Status != store.StatusFailed {
		return errStopped
	}
	if err := r.peers.Billing.ReleaseHold(ctx, c.OrgID, c.ID.String()); err != nil {
		return fmt.Errorf("release hold: %w", err)
	}
	return errStopped
}

// resolve stores the audience as recipients, resuming after the audience cursor, a batch at
// a time: never the whole audience in memory. Up to resolveInFlight batches are written at
// once while the next one streams and renders, and the cursor moves past each batch once it
// and every batch before it are stored.
//
// A campaign that is no A/B test (whose samples are drawn from the whole audience) also hands
// each batch to messaging as it is stored, as a bulk batch, and its queue cursor moves with
// the audience's: the audience is queued in the same pass. It opens a bulk hand-off first:
// messaging holds the campaign's batches back until the hold is placed (held releases them),
// and drops them if the campaign fails or is canceled first, so nothing is created, let alone sent, before the
// credits are held.
func (r *Runner) resolve(ctx context.Context, c *store.Campaign, sandbox bool, orgZone string) error {
	after, err := r.store.AudienceCursor(ctx, c.ID)
	if err != nil {
		return err
	}
	queue := !c.IsAbTest
	var out outgoing
	if queue {
		if err := r.peers.Messaging.OpenBulk(ctx, c.OrgID, SourceKind, c.ID.String()); err != nil {
			return fmt.Errorf("hold the audience back in messaging: %w", err)
		}
		out = newOutgoing(c, orgZone, !sandbox)
	}
	req := audience.Request(c.SegmentID, c.ContactFilter, after, audienceBatch)
	links := shortlinks.New(r.peers.Messaging, c.OrgID, SourceKind, c.ID)
	// A text merged to nothing ("{{firstName}}" without one) fails alone: messaging would
	// refuse the whole batch it is in. So does one merged past what one message carries (a
	// long custom field): it is not sent at all rather than as a giant SMS.
	unsendable := func(body string) string {
		switch {
		case strings.TrimSpace(body) == "" && c.MediaURL == nil:
			return store.UnsentEmptyText
		case !mergefields.Fits(body):
			return store.UnsentTooLong
		}
		return ""
	}
	// Every text the campaign sends is rendered here: its message, or an A/B test's two
	// variants (the rest gets the winner's, so both are kept).
	msgs := []*mergefields.Template{mergefields.Compile(c.Message)}
	if c.IsAbTest {
		msgs = []*mergefields.Template{mergefields.Compile(c.Variant(store.VariantA)), mergefields.Compile(c.Variant(store.VariantB))}
	}
	writes := &inOrder{limit: resolveInFlight, settle: func(last uuid.UUID) error {
		return r.store.MoveAudienceCursor(ctx, c.ID, last, queue)
	}}
	err = r.peers.Contacts.Audience(ctx, c.OrgID, req, func(members []*contactsv1.AudienceMember) error {
		if err := r.still(ctx, c, store.StatusPending); err != nil {
			return err
		}
		texts := make([]string, 0, len(members)*len(msgs))
		for _, m := range members {
			for _, msg := range msgs {
				texts = append(texts, msg.Text(m, c.NormalizeText))
			}
		}
		// The stored texts, and so their prices, carry the short links.
		if err := links.Rewrite(ctx, texts); err != nil {
			return err
		}
		batch := make([]store.Recipient, len(members))
		for i, m := range members {
			id, err := uuid.Parse(m.GetContactId())
			if err != nil {
				return fmt.Errorf("audience member id %q: %w", m.GetContactId(), err)
			}
			body := texts[i*len(msgs)]
			rc := store.Recipient{ContactID: id, Phone: m.GetPhone(), Body: body, Credits: price(c, body),
				Unsendable: unsendable(body), Timezone: quiethours.RecipientZone(m.GetTimezone(), m.GetPhone()),
				State: quiethours.StateCode(m.GetState())}
			if c.IsAbTest {
				b := texts[i*len(msgs)+1]
				cb := price(c, b)
				rc.BodyB, rc.CreditsB = &b, &cb
				if rc.Unsendable == "" {
					rc.Unsendable = unsendable(b)
				}
			}
			batch[i] = rc
		}
		var msgs []*messagingv1.OutgoingMessage
		if queue {
			msgs = out.messages(batch)
		}
		return writes.start(batch[len(batch)-1].ContactID, func() error {
			if err := r.store.AddRecipients(ctx, c.OrgID, c.ID, batch); err != nil || len(msgs) == 0 {
				return err
			}
			if err := r.peers.Messaging.QueueBulk(ctx, c.OrgID, msgs, out.pool); err != nil {
				return queueError{err}
			}
			return nil
		})
	})
	err = writes.finish(err)
	if qe := (queueError{}); errors.As(err, &qe) {
		if reason := refusal(qe.err); reason != "" {
			r.log.WarnContext(ctx, "messaging refused a campaign's messages", "campaign", c.ID, "error", err)
			return r.fail(ctx, c, reason) // suspended, number removed, ...: final
		}
		return err
	}
	if errors.Is(err, clients.ErrNotFound) {
		return r.fail(ctx, c, apierr.ReasonSegmentNotFound)
	}
	return err
}

// queueError is messaging's error in the resolve, which also reads contacts: its refusal is
// told apart from the audience's (clients.ErrNotFound from either).
type queueError struct{ err error }

func (e queueError) Error() string { return "queue messages: " + e.err.Error() }
func (e queueError) Unwrap() error { return e.err }

// fail ends the campaign as failed with reason and queues the release of its hold, if any;
// it returns errStopped so the run ends there.
func (r *Runner) fail(ctx context.Context, c *store.Campaign, reason string) error {
	pending := c.Status == store.StatusPending || (c.Status == store.StatusPaused && c.PausedFrom != nil && *c.PausedFrom == store.StatusPending)
	err := r.store.InTx(ctx, func(tx pgx.Tx) error {
		failed, err := r.store.Fail(ctx, tx, c.OrgID, c.ID, reason)
		if err != nil || !failed {
			return err
		}
		if pending { // the audience handed to messaging so far is dropped, never sent
			if err := r.peers.Messaging.CancelBulk(ctx, c.OrgID, SourceKind, c.ID.String()); err != nil {
				return fmt.Errorf("drop the queued audience: %w", err)
			}
		}
		if c.HeldCredits == 0 {
			return nil
		}
		return r.releaseTx(ctx, tx, c.OrgID, c.ID)
	})
	if err != nil {
		return err
	}
	return errStopped
}

// hold places the campaign's hold for its estimate; a refusal (no credits, suspended) is
// returned as its reason.
func (r *Runner) hold(ctx context.Context, c *store.Campaign, estimate int32) (string, error) {
	return r.peers.Billing.Hold(ctx, c.OrgID, c.ID.String(), estimate)
}

// queue hands the recipients not yet queued (with samplesOnly, an A/B test's samples; else
// the others) to messaging, a batch at a time by contact id, while the campaign stays in
// stage, moving the campaign's queue cursor past each batch messaging stored. Each batch is a
// bulk batch (messaging creates its messages when they are due); one that was queued before
// the process died is queued again under the same dedupe keys, and messaging creates no
// message twice.
func (r *Runner) queue(ctx context.Context, c *store.Campaign, orgZone, stage string, samplesOnly bool) error {
	out := newOutgoing(c, orgZone, c.HeldCredits > 0)
	if err := r.still(ctx, c, stage); err != nil {
		return err
	}
	// Up to queueInFlight batches are with messaging at once, so that its writes of one overlap
	// the next's.
	calls := &inOrder{limit: queueInFlight, settle: func(last uuid.UUID) error {
		return r.store.MarkQueued(ctx, c.ID, samplesOnly, last)
	}}
	first := true
	err := r.store.EachUnqueued(ctx, c.ID, samplesOnly, queueBatch, func(batch []store.Recipient) error {
		if !first {
			if err := r.still(ctx, c, stage); err != nil {
				return err
			}
		}
		first = false
		msgs := out.messages(batch)
		return calls.start(batch[len(batch)-1].ContactID, func() error {
			if err := r.peers.Messaging.QueueBulk(ctx, c.OrgID, msgs, out.pool); err != nil {
				return fmt.Errorf("queue messages: %w", err)
			}
			return nil
		})
	})
	err = calls.finish(err)
	if reason := refusal(err); reason != "" {
		r.log.WarnContext(ctx, "messaging refused a campaign's messages", "campaign", c.ID, "error", err)
		return r.fail(ctx, c, reason) // suspended after the hold, number removed, ...: final
	}
	return err
}

// price is what a message of c with the given final text costs: its route by pkg/route's rule
// (media or forceRoute MMS is MMS, AUTO is MMS for a text over two segments), which messaging
// applies again to the same text and forceRoute when it stores the message.
func price(c *store.Campaign, text string) int32 {
	_, p := route.Price(c.ForceRoute, c.MediaURL != nil, text)
	return p
}

// outgoing is what every message of a campaign carries besides its recipient and text.
type outgoing struct {
	source                         string // the campaign's id
	zone, hold, from, media, route string
	// pool is the campaign's number pool, from which messaging picks each message's number
	// (from is then empty); nil for none.
	pool []string
}

// newOutgoing is the campaign's message shape: quiet hours in its timezone (else orgZone),
// posted against its hold when paid.
func newOutgoing(c *store.Campaign, orgZone string, paid bool) outgoing {
	o := outgoing{source: c.ID.String(), zone: orgZone, route: c.ForceRoute}
	if c.Timezone != nil {
		o.zone = *c.Timezone
	}
	if paid {
		o.hold = o.source
	}
	if c.FromPhoneNumberID != nil {
		o.from = c.FromPhoneNumberID.String()
	}
	if len(c.FromPhoneNumberIDs) > 0 {
		o.from, o.pool = "", make([]string, len(c.FromPhoneNumberIDs))
		for i, id := range c.FromPhoneNumberIDs {
			o.pool[i] = id.String()
		}
	}
	if c.MediaURL != nil {
		o.media = *c.MediaURL
	}
	return o
}

// dedupePrefix starts the dedupe keys of campaign's messages, "campaign:<id>:", which end
// with the recipient's contact id.
func dedupePrefix(campaign string) string { return SourceKind + ":" + campaign + ":" }

// messages are the messages of a batch of recipients, each under the dedupe key
// "campaign:<id>:<contact id>"; an unsendable recipient has none.
func (o outgoing) messages(batch []store.Recipient) []*messagingv1.OutgoingMessage {
	msgs := make([]*messagingv1.OutgoingMessage, 0, len(batch))
	for _, rc := range batch {
		if rc.Unsendable != "" {
			continue
		}
		msgs = append(msgs, &messagingv1.OutgoingMessage{
			DedupeKey: dedupePrefix(o.source) + rc.ContactID.String(),
			To:        rc.Phone, Body: rc.Body, MediaUrl: o.media, FromPhoneNumberId: o.from,
			SourceKind: SourceKind, SourceId: o.source, HoldId: o.hold, QuietHoursTimezone: o.zone,
			RecipientTimezone: rc.Timezone, RecipientState: rc.State, ForceRoute: o.route,
		})
	}
	return msgs
}

// inOrder runs calls for batches of a walk by key, up to limit at once, and settles each
// batch (moves a cursor to its last key) once it and every batch started before it are done;
// after a failure nothing more is settled, since the failed batch would be skipped.
type inOrder struct {
	limit   int
	settle  func(last uuid.UUID) error
	pending []pendingCall
}

type pendingCall struct {
	last uuid.UUID
	done chan error
}

// start runs call for the batch ending at last; when limit calls are going, it waits for the
// oldest and settles it, returning its error.
func (o *inOrder) start(last uuid.UUID, call func() error) error {
	p := pendingCall{last: last, done: make(chan error, 1)}
	go func() { p.done <- call() }()
	o.pending = append(o.pending, p)
	if len(o.pending) < o.limit {
		return nil
	}
	return o.settleOldest()
}

func (o *inOrder) settleOldest() error {
	p := o.pending[0]
	o.pending = o.pending[1:]
	if err := <-p.done; err != nil {
		return err
	}
	return o.settle(p.last)
}

// finish waits for every call still going, settling them in order unless err (the walk's)
// or an earlier call failed, and returns the first error.
func (o *inOrder) finish(err error) error {
	for err == nil && len(o.pending) > 0 {
		err = o.settleOldest()
	}
	for _, p := range o.pending {
		<-p.done
	}
	o.pending = nil
	return err
}

// refusal is the reason a campaign fails when messaging refused its messages for good
// (invalid, not found, forbidden, refused: the same batch would be refused again), "" for no
// error or one worth retrying.
func refusal(err error) string {
	if reason := clients.Reason(err); reason == apierr.ReasonBillingSuspended {
		return reason
	}
	for _, final := range []error{clients.ErrInvalid, clients.ErrNotFound, clients.ErrForbidden, clients.ErrRefused} {
		if errors.Is(err, final) {
			if reason := clients.Reason(err); reason != "" {
				return reason
			}
			return apierr.ReasonFailedPrecondition
		}
	}
	return ""
}

// still returns errStopped once the campaign is no longer in stage for this submission.
func (r *Runner) still(ctx context.Context, c *store.Campaign, stage string) error {
	status, submission, err := r.store.Status(ctx, c.OrgID, c.ID)
	if err != nil {
		return err
	}
	if status != stage || submission != c.Submission {
		return errStopped
	}
	return nil
}

// completeTx completes the campaign when every recipient is sent or failed, and queues the
// release of the rest of its hold, inside tx.
func (r *Runner) completeTx(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) error {
	done, err := r.store.Complete(ctx, tx, org, id)
	if err != nil || done == nil || done.HeldCredits == 0 {
		return err
	}
	return r.releaseTx(ctx, tx, org, id)
}
