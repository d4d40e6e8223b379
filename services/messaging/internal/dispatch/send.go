package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/clients/billing"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/quiethours"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// Error codes stored on messages that failed before or at the carrier.
const (
	CodeCarrierUnavailable = apierr.ReasonCarrierUnavailable
	// CodeUnavailable: a service the hand-off needed (the throttle's Redis, contacts for the
	// consent check) did not answer; the carrier was never asked.
	CodeUnavailable   = apierr.ReasonUnavailable
	CodeMisconfigured = apierr.ReasonCarrierMisconfigured
	CodeNotSendable   = apierr.ReasonNotSendable
	// CodeContactGone: the recipient's contact was deleted while the message waited; the
	// message was withdrawn, which a campaign counts neither as sent nor as failed.
	CodeContactGone = apierr.ReasonContactNotFound
	// CodeOptedOut: the recipient opted out while the bulk message waited; like a deleted
	// contact's, the message was withdrawn, not a failure of the send.
	CodeOptedOut      = apierr.ReasonContactOptedOut
	CodeHoldNotFound  = apierr.ReasonHoldNotFound
	CodeHoldExhausted = apierr.ReasonHoldExhausted
	CodeHoldReleased  = apierr.ReasonHoldReleased
	// CodeSourceCanceled: the campaign or poll was canceled before the message left the queue.
	CodeSourceCanceled = apierr.ReasonSourceCanceled
)

// Outcome is what became of one send.
type Outcome struct {
	Status            string // sent, failed, or sending when the carrier's answer was lost
	ProviderMessageID string
	ErrorCode         string
	Err               error // the carrier's error, for failed and sending
	// Refused says why the recipient could not be texted when the message was to be handed to
	// the carrier (it failed with CodeNotSendable); unspecified otherwise.
	Refused contactsv1.SendableReason
	// unsent is set when the carrier did not take the message and nothing is recorded yet:
	// the caller either retries later or fails it.
	unsent bool
	// moved is set when the carrier refused the message's number (rotation.go) and the
	// message is queued again from another number of its source.
	moved bool
}

// SendNow sends a stored message that is already "sending" (a reply) through its carrier,
// paced by its number's throttle, and settles its status and credits. A recipient who can no
// longer be texted once the throttle lets the message go (a STOP came while it waited) fails
// it, with nothing charged, and Outcome.Refused says why.
func (d *Dispatcher) SendNow(ctx context.Context, m store.Message) (Outcome, error) {
	tok, err := d.tokenFor(ctx, m.OurNumber)
	if err != nil {
		return d.fail(ctx, m, CodeUnavailable, err)
	}
	m.DispatchedAt = &tok.start
	// Consent is checked once the token's start has come, the moment before the carrier: a
	// reply has no claim to make meanwhile.
	var refused contactsv1.SendableReason
	err = ctx.Err()
	if d.throttle.ready(ctx, tok) {
		refused, err = d.refusal(ctx, m)
	}
	if err != nil {
		d.throttle.release(ctx, tok)
		return d.fail(ctx, m, CodeUnavailable, err) // nothing sent; the caller may retry
	}
	if refused != contactsv1.SendableReason_SENDABLE_REASON_OK {
		d.throttle.release(ctx, tok)
		o, err := d.fail(ctx, m, CodeNotSendable, nil)
		o.Refused = refused
		return o, err
	}
	o, err := d.transmit(ctx, m, tok)
	if err != nil {
		return o, err
	}
	if o.unsent {
		return d.fail(ctx, m, CodeCarrierUnavailable, o.Err)
	}
	return o, nil
}

// tokenFor is a send token of one of our numbers, at its own rate.
func (d *Dispatcher) tokenFor(ctx context.Context, number string) (token, error) {
	n, err := d.store.NumberByE164(ctx, number)
	if err != nil && !errors.Is(err, store.ErrNotFound) { // a number removed since: the default
		return token{}, err
	}
	return d.throttle.acquire(ctx, number, d.RateOf(n.MPS))
}

// dispatchQueued sends one queued message: quiet hours, consent and credits are checked when
// it is taken off the queue (a refused message touches no credits), and consent again when its
// number's throttle lets it go. A positive wait asks to be called again after it. Each step
// shares its round trip with the other messages dispatched at the same time (batches.go).
// A message whose number already has enough jobs waiting for its tokens goes back to the
// queue with a slot booked in the number's line (lines.go).
func (d *Dispatcher) dispatchQueued(ctx context.Context, org, id uuid.UUID, run attempt) (verdict, error) {
	l, err := d.batches.load.Do(ctx, id)
	if err != nil {
		return verdict{}, err
	}
	if !l.found || l.q.OrgID != org {
		return verdict{}, nil // deleted with its contact
	}
	m := l.q.Message
	if m.Status != store.StatusQueued {
		return verdict{}, nil
	}
	if wait := quietHours(m).Wait(time.Now()); wait > 0 {
		return verdict{wait: wait}, nil
	}
	if wait, stopped, err := d.sourceWants(ctx, m, l.q.SourceState, run.snoozes); err != nil || stopped || wait > 0 {
		return verdict{wait: wait}, err
	}
	rate, now := d.RateOf(l.q.NumberMPS), time.Now()
	if slot := d.throttle.enter(m.OurNumber, rate, run.slot, now); !slot.IsZero() {
		return verdict{wait: comeBackIn(slot, now), slot: slot}, nil
	}
	inLine := true
	leave := func() {
		if inLine {
			inLine = false
			d.throttle.leave(m.OurNumber, time.Now())
		}
	}
	defer leave()
	wait, err := d.handOff(ctx, m, rate, run, leave)
	return verdict{wait: wait}, err
}

// handOff is dispatchQueued for a message admitted into its number's line: it leaves the line
// (leave) once it has its token or gave up waiting for one.
func (d *Dispatcher) handOff(ctx context.Context, m store.Message, rate int, run attempt, leave func()) (time.Duration, error) {
	if stopped, err := d.stopIfRefused(ctx, m); err != nil || stopped {
		return 0, err
	}
	if skipped, err := d.skipIfCapped(ctx, m); err != nil || skipped {
		return 0, err
	}
	// A message's own hold, placed by an earlier attempt, already reserves its credits.
	if m.Billable && m.HoldID != m.ID.String() {
		pay := d.postCampaignHold
		if m.HoldID == "" {
			pay = d.placeOwnHold
		}
		if code, err := pay(ctx, &m); err != nil || code != "" {
			if err != nil {
				return 0, err
			}
			// A source canceled since it was read has released its hold: the message is
			// withdrawn with the others, not failed for want of credits.
			if _, stopped, err := d.heldBack(ctx, m, run.snoozes); err != nil || stopped {
				return 0, err
			}
			_, err := d.fail(ctx, m, code, nil)
			return 0, err
		}
	}
	tok, err := d.throttle.acquire(ctx, m.OurNumber, rate)
	leave()
	if err != nil {
		return 0, err
	}
	claimed, err := d.batches.claim.Do(ctx, store.ClaimRequest{ID: m.ID, DispatchedAt: tok.start, OurNumber: m.OurNumber})
	if err != nil || !claimed { // not claimed: taken, moved to another number, or its source paused or canceled while it waited
		d.throttle.release(ctx, tok)
		if err != nil {
			return 0, err
		}
		wait, stopped, err := d.heldBack(ctx, m, run.snoozes)
		if err == nil && !stopped && wait == 0 {
			wait = movedWait // a moved message goes from its new number; a taken one is left as it is
		}
		return wait, err
	}
	m.Status, m.DispatchedAt = store.StatusSending, &tok.start
	// Consent is read again once the claim is recorded: an opt-out recorded before the claim
	// is seen here, and one recorded after it is not acknowledged before this hand-off is over
	// (AwaitHandOffs).
	if stopped, err := d.stopIfRefused(ctx, m); err != nil || stopped {
		d.throttle.release(ctx, tok)
		if err != nil {
			if uerr := d.store.Unclaim(context.WithoutCancel(ctx), m.ID); uerr != nil {
				return 0, errors.Join(err, uerr)
			}
		}
		return 0, err
	}
	if !d.throttle.ready(ctx, tok) { // stopping: nothing went out
		d.throttle.release(context.WithoutCancel(ctx), tok)
		if err := d.store.Unclaim(context.WithoutCancel(ctx), m.ID); err != nil {
			return 0, err
		}
		return 0, ctx.Err()
	}
	o, err := d.transmit(ctx, m, tok)
	if err != nil {
		return 0, err
	}
	if o.moved {
		return movedWait, nil // dispatched again from its new number
	}
	if o.unsent {
		if run.last {
			_, err := d.fail(ctx, m, CodeCarrierUnavailable, o.Err)
			return 0, err
		}
		if err := d.store.Unclaim(ctx, m.ID); err != nil {
			return 0, err
		}
		return 0, o.Err // River retries with backoff
	}
	return 0, nil
}

// movedWait is how long a message moved off a refused number waits before its dispatch
// from the new one: at once, but as a new run, which reads its new number.
const movedWait = time.Millisecond

// attempt is what a dispatch run knows of its job: whether it is the last attempt, how often
// it was snoozed before, and the slot it booked in its number's line on an earlier run (zero
// for none).
type attempt struct {
	last    bool
	snoozes int
	slot    time.Time
}

// verdict is what a dispatch run asks of its job: a positive wait, to be run again after it,
// and slot, the place it booked in its number's line (zero for none), kept for that run.
type verdict struct {
	wait time.Duration
	slot time.Time
}

// A paused source's queued message looks again after pausedRecheck, doubling with each
// snooze up to pausedMaxWait: a long pause costs each message about one run a minute, not
// one every 5 s. A resume wakes them at once (WakeSource).
const (
	pausedRecheck = 5 * time.Second
	pausedMaxWait = time.Minute
)

// pausedWait is the wait of a paused source's message snoozed `snoozes` times before.
func pausedWait(snoozes int) time.Duration {
	if snoozes >= 4 { // 5 s << 4 = 80 s, past the cap
		return pausedMaxWait
	}
	return pausedRecheck << snoozes
}

// heldBack says what m's source (campaign, poll) wants of it: a paused source's message waits
// (wait > 0, growing with snoozes); a canceled source's is withdrawn, failed SOURCE_CANCELED
// with whatever it paid returned (stopped).
func (d *Dispatcher) heldBack(ctx context.Context, m store.Message, snoozes int) (wait time.Duration, stopped bool, err error) {
	state, err := d.store.SourceState(ctx, m)
	if err != nil {
		return 0, false, err
	}
	return d.sourceWants(ctx, m, state, snoozes)
}

// sourceWants is heldBack for a source state already read.
func (d *Dispatcher) sourceWants(ctx context.Context, m store.Message, state string, snoozes int) (wait time.Duration, stopped bool, err error) {
	switch {
	case state == store.SourcePaused || state == store.SourceHeld:
		return pausedWait(snoozes), false, nil
	case state == store.SourceCanceled:
		_, err := d.fail(ctx, m, CodeSourceCanceled, nil)
		return 0, true, err
	}
	return 0, false, nil
}

// refusal asks contacts whether m's recipient may be texted now, the moment before m is handed
// to the carrier, so that a STOP recorded while m waited (throttle, quiet hours, queue) stops
// it: SENDABLE_REASON_OK means send, anything else is why not. System messages (keyword
// confirmations such as the opt-out's own) go out whatever the consent; test copies are
// refused only to an opted-out number.
func (d *Dispatcher) refusal(ctx context.Context, m store.Message) (contactsv1.SendableReason, error) {
	if m.SourceKind == store.SourceSystem {
		return contactsv1.SendableReason_SENDABLE_REASON_OK, nil
	}
	a, err := d.batches.consent.Do(ctx, m)
	if err != nil {
		return 0, err
	}
	return a.reason, a.err
}

// sendableReason reads contacts' answer r about m's recipient as refusal answers.
func sendableReason(m store.Message, r *contactsv1.Sendability) contactsv1.SendableReason {
	if r.GetSendable() {
		return contactsv1.SendableReason_SENDABLE_REASON_OK
	}
	// A test copy may go to any number (the sender's own phone need not be a contact), but
	// never to one that opted out.
	if m.SourceKind == store.SourceTest && r.GetReason() != contactsv1.SendableReason_SENDABLE_REASON_OPTED_OUT {
		return contactsv1.SendableReason_SENDABLE_REASON_OK
	}
	if r.GetReason() == contactsv1.SendableReason_SENDABLE_REASON_OK {
		return contactsv1.SendableReason_SENDABLE_REASON_UNSPECIFIED // not sendable, whatever it says
	}
	return r.GetReason()
}

// stopIfRefused fails m (CodeOptedOut when its recipient opted out while it waited,
// CodeContactGone when no contact has the phone any more, else CodeNotSendable; whatever it
// paid returned) when its recipient may not be texted now, and reports whether it did.
func (d *Dispatcher) stopIfRefused(ctx context.Context, m store.Message) (stopped bool, err error) {
	refused, err := d.refusal(ctx, m)
	if err != nil || refused == contactsv1.SendableReason_SENDABLE_REASON_OK {
		return false, err
	}
	code := CodeNotSendable
	switch refused {
	case contactsv1.SendableReason_SENDABLE_REASON_NO_CONTACT:
		code = CodeContactGone
	case contactsv1.SendableReason_SENDABLE_REASON_OPTED_OUT:
		code = CodeOptedOut
	}
	_, err = d.fail(ctx, m, code, nil)
	return true, err
}

// placeOwnHold reserves a queued message's credits under a hold of its own id. A refusal
// (no credits, suspended account) is returned as a code; the message then fails.
func (d *Dispatcher) placeOwnHold(ctx context.Context, m *store.Message) (string, error) {
	code, err := PlaceHold(ctx, d.billing, m.OrgID, m.ID, m.Credits)
	if err != nil || code != "" {
		return code, err
	}
	if err := d.store.SetHold(ctx, m.ID, m.ID.String()); err != nil {
		return "", err
	}
	m.HoldID = m.ID.String()
	return "", nil
}

// PlaceHold reserves credits for one message under a hold of the message's id. A refusal
// (INSUFFICIENT_CREDITS, BILLING_SUSPENDED) is returned as its reason, with the error.
func PlaceHold(ctx context.Context, b *billing.Client, org, message uuid.UUID, credits int32) (string, error) {
	err := b.PlaceHold(ctx, org, message.String(), credits)
	switch reason := clients.Reason(err); reason {
	case "":
		if err != nil {
			return "", fmt.Errorf("place hold: %w", err)
		}
		return "", nil
	case apierr.ReasonInsufficientCredits, apierr.ReasonBillingSuspended:
		return reason, nil
	default:
		return "", fmt.Errorf("place hold: %w", err)
	}
}

// transmit hands a "sending" message holding tok to its carrier and records the outcome. It
// gives tok back as soon as the carrier answered (a second later it is free again), before
// recording anything, so the number's pace does not wait for the database. Only an error of
// our own (database, billing) is returned as err; carrier errors are in the Outcome.
func (d *Dispatcher) transmit(ctx context.Context, m store.Message, tok token) (Outcome, error) {
	p, err := d.provider(m.Provider)
	if err != nil {
		d.throttle.release(ctx, tok) // unused: nothing reached a carrier
		return d.fail(ctx, m, CodeMisconfigured, err)
	}
	var media []string
	media = append(media, m.MediaURLs...)
	out := carrier.Outgoing{
		MessageID:         m.ID.String(),
		From:              m.OurNumber,
		To:                m.ContactPhone,
		Body:              m.Body,
		MediaURLs:         media,
		MMS:               m.IsMMS,
		StatusCallbackURL: d.statusCallbackURL(p.Name(), m.ID),
	}
	// Nothing may arrive after the window closes where quiet hours apply to the message.
	if now, q := time.Now(), quietHours(m); q.Wait(now) == 0 {
		if closes, ok := q.Closes(now); ok {
			out.ValidityPeriod = closes.Sub(now)
		}
	}
	callCtx, cancel := context.WithDeadline(ctx, d.callDeadline(m))
	acc, sendErr := p.Send(callCtx, out)
	cancel()
	tok.sent = true // whatever the answer, the send may have reached the carrier
	d.throttle.release(context.WithoutCancel(ctx), tok)
	var rejected *carrier.RejectedError
	switch {
	case sendErr == nil:
		// The carrier has it: record that before anything else, on a context that outlives
		// the caller's, since a lost record here is what the status callback must repair.
		ctx = context.WithoutCancel(ctx)
		if err := d.recordAccepted(ctx, m, p, acc); err != nil {
			return Outcome{}, err
		}
		return Outcome{Status: store.StatusSent, ProviderMessageID: acc.ProviderMessageID}, nil
	case errors.As(sendErr, &rejected):
		if rejected.OptOut {
			d.recordCarrierOptOut(ctx, m, rejected.Code)
		}
		if reason, ok := refusesNumber(m, rejected.Code); ok {
			moved, err := d.leaveRotation(ctx, m, reason, m.ID)
			if err != nil {
				d.log.ErrorContext(ctx, "take a refused number out of rotation", "message", m.ID, "err", err)
			}
			if moved { // queued again, from another number of its source
				return Outcome{Status: store.StatusQueued, ErrorCode: rejected.Code, Err: sendErr, moved: true}, nil
			}
		}
		return d.fail(ctx, m, rejected.Code, sendErr)
	case errors.Is(sendErr, carrier.ErrOutcomeUnknown):
		d.log.WarnContext(ctx, "carrier outcome unknown; waiting for its status callback", "message", m.ID, "err", sendErr)
		return Outcome{Status: store.StatusSending, Err: sendErr}, nil
	case errors.Is(sendErr, carrier.ErrUnavailable), errors.Is(sendErr, context.Canceled), errors.Is(sendErr, context.DeadlineExceeded):
		// Nothing went out (an unknown outcome was matched above): safe to send later.
		return Outcome{Status: store.StatusFailed, ErrorCode: CodeCarrierUnavailable, Err: sendErr, unsent: true}, nil
	default:
		return d.fail(ctx, m, CodeMisconfigured, sendErr)
	}
}

// recordAccepted moves m to "sent" under the carrier's id, with the other acceptances
// recorded at the same time (recordAcceptedMany).
func (d *Dispatcher) recordAccepted(ctx context.Context, m store.Message, p carrier.Provider, acc carrier.Accepted) error {
	_, err := d.batches.accept.Do(ctx, accepted{m: m, provider: p.Name(), acc: acc})
	return err
}

// recordCarrierOptOut records in contacts that the carrier says the recipient unsubscribed,
// with the carrier's error code (Twilio's 21610) as the consent history's evidence.
func (d *Dispatcher) recordCarrierOptOut(ctx context.Context, m store.Message, code string) {
	_, err := d.contacts.SetConsent(ctx, m.OrgID, &contactsv1.SetConsentRequest{
		Phone: m.ContactPhone, OptedIn: false, OccurredAt: timestamppb.Now(), Source: "carrier:" + code,
	})
	if err != nil {
		d.log.ErrorContext(ctx, "record carrier opt-out", "message", m.ID, "err", err)
	}
}

// fail marks m failed with code and returns what it holds.
func (d *Dispatcher) fail(ctx context.Context, m store.Message, code string, cause error) (Outcome, error) {
	ctx = context.WithoutCancel(ctx)
	if err := d.advanceDispatched(ctx, m, carrier.Status{Status: carrier.StatusFailed, ErrorCode: code}); err != nil {
		return Outcome{}, err
	}
	if cause != nil {
		d.log.WarnContext(ctx, "message failed", "message", m.ID, "code", code, "err", cause)
	}
	return Outcome{Status: store.StatusFailed, ErrorCode: code, Err: cause}, nil
}

// ApplyStatus applies a carrier's status callback for our message id (or, when id is nil,
// the carrier's message id). Statuses only move forward; a repeated or late callback changes
// nothing. A callback saying the recipient unsubscribed records the opt-out in contacts.
func (d *Dispatcher) ApplyStatus(ctx context.Context, provider string, id uuid.UUID, s carrier.Status) error {
	m, err := d.store.MessageForCallback(ctx, provider, id, s.ProviderMessageID)
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnknownMessage
	}
	if err != nil {
		return err
	}
	if s.OptOut {
		d.recordCarrierOptOut(ctx, m, s.ErrorCode)
	}
	if s.Status == carrier.StatusQueued {
		return nil // the carrier has it; nothing moves
	}
	d.statusRefusesNumber(ctx, m, s)
	return d.advance(ctx, m.ID, s)
}

// applyStatuses is ApplyStatus for many of provider's messages at once (the sandbox's
// reports of a dispatch batch): one transaction moves them and publishes their changes, then
// each that left "sending" or failed is settled.
func (d *Dispatcher) applyStatuses(ctx context.Context, provider string, reports []store.StatusReport) error {
	byID := make(map[uuid.UUID]carrier.Status, len(reports))
	for _, r := range reports {
		if _, ok := byID[r.ID]; !ok {
			byID[r.ID] = carrier.Status{ProviderMessageID: r.ProviderMessageID, Status: r.Status, ErrorCode: r.ErrorCode}
		}
	}
	var moved []store.Message
	err := d.store.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if moved, err = d.store.AdvanceStatusMany(ctx, tx, provider, reports, time.Now()); err != nil {
			return err
		}
		changes := make([]statusChange, len(moved))
		var taken []store.Message
		for i, m := range moved {
			changes[i] = statusChange{m, byID[m.ID]}
			if carrierTook(m, byID[m.ID].Status) {
				taken = append(taken, m)
			}
		}
		if err := outbox.EnqueueMany(ctx, tx, statusEvents(changes)); err != nil {
			return err
		}
		return d.store.CountSent(ctx, tx, taken)
	})
	if err != nil {
		return err
	}
	for _, before := range moved {
		d.settleMoved(ctx, before, byID[before.ID].Status)
	}
	return nil
}

// advance moves a message's status forward, publishes the change, and settles credits when
// the message leaves "sending": consumed if the carrier took it, returned if it failed there.
func (d *Dispatcher) advance(ctx context.Context, id uuid.UUID, s carrier.Status) error {
	return d.advanceAt(ctx, id, s, nil)
}

// advanceDispatched is advance for a message this process dispatched, recording when its
// throttle let it go (a reply's time is recorded only here).
func (d *Dispatcher) advanceDispatched(ctx context.Context, m store.Message, s carrier.Status) error {
	return d.advanceAt(ctx, m.ID, s, m.DispatchedAt)
}

// A claimed message withdrawn before the hand-off (its recipient's opt-out seen after the
// claim) leaves the conversation it joined at its claim: it was never sent.
func (d *Dispatcher) advanceAt(ctx context.Context, id uuid.UUID, s carrier.Status, dispatchedAt *time.Time) error {
	_, err := d.advanceWith(ctx, s, func(tx pgx.Tx, c store.StatusChange) (store.Message, bool, error) {
		c.DispatchedAt = dispatchedAt
		before, changed, err := d.store.AdvanceStatus(ctx, tx, id, c)
		if err == nil && changed && before.Status == store.StatusSending && s.Status == carrier.StatusFailed && apierr.Withdrawn(s.ErrorCode) {
			err = d.store.Unthread(ctx, tx, before)
		}
		return before, changed, err
	})
	return err
}

// statusMove applies a status change inside tx and returns the message as it was before.
type statusMove func(tx pgx.Tx, c store.StatusChange) (before store.Message, changed bool, err error)

// advanceWith moves a message's status with move, publishes the change in the same
// transaction, and settles its credits (settle). It reports whether the status changed.
//
// A settle that fails (billing down or refusing) is not an error of the move: the status is
// recorded and stays true (a message the carrier took is sent, whatever billing says), the
// message stays unsettled, and the reconciler's sweep repeats the settle (settleMissed).
func (d *Dispatcher) advanceWith(ctx context.Context, s carrier.Status, move statusMove) (changed bool, err error) {
	var before store.Message
	err = d.store.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		before, changed, err = move(tx, store.StatusChange{
			Status: s.Status, ProviderMessageID: s.ProviderMessageID, ErrorCode: s.ErrorCode, At: time.Now(),
		})
		if err != nil || !changed {
			return err
		}
		if carrierTook(before, s.Status) {
			if err := d.store.CountSent(ctx, tx, []store.Message{before}); err != nil {
				return err
			}
		}
		return publishStatus(ctx, tx, before, s)
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, ErrUnknownMessage
	}
	if err != nil || !changed {
		return false, err
	}
	d.settleMoved(ctx, before, s.Status)
	return true, nil
}

// settleMoved settles a message that moved from before to status when it left "sending" or
// failed. A settle that fails is logged; the reconciler repeats it.
func (d *Dispatcher) settleMoved(ctx context.Context, before store.Message, status string) {
	leaving := before.Status == store.StatusQueued || before.Status == store.StatusSending
	if leaving || status == carrier.StatusFailed {
		if err := d.settle(ctx, before, status); err != nil {
			d.log.WarnContext(ctx, "settle credits failed; the reconciler repeats it", "message", before.ID, "status", status, "err", err)
		}
	}
}

// settle squares a message's credits with billing once it reached status, and records that it
// did: a message the carrier took (sent, delivered, undelivered) is debited against its hold;
// a failed one is not, and a debit it already had (posted at "sent", or before dispatch on a
// campaign's hold) is refunded, since a failed message costs nothing; the message's own hold
// is released either way. Every billing call is idempotent per message, so the reconciler
// repeats a settle that billing missed (settleMissed) without charging anything twice.
func (d *Dispatcher) settle(ctx context.Context, m store.Message, status string) error {
	if !m.Billable || m.HoldID == "" {
		return nil
	}
	if status == carrier.StatusFailed {
		if err := d.billing.RefundDebit(ctx, m.OrgID, m.ID); err != nil {
			return fmt.Errorf("refund credits of message %s: %w", m.ID, err)
		}
	} else if m.Credits > 0 {
		if err := d.billing.PostHold(ctx, m.OrgID, m.HoldID, m.ID, m.Credits); err != nil {
			return fmt.Errorf("consume credits of message %s: %w", m.ID, err)
		}
	}
	if m.HoldID == m.ID.String() {
		if err := d.billing.ReleaseHold(ctx, m.OrgID, m.HoldID); err != nil {
			return fmt.Errorf("release hold of message %s: %w", m.ID, err)
		}
	}
	return d.store.MarkSettled(ctx, m.ID)
}

// postCampaignHold debits a queued message against the campaign's hold it names before the
// message is sent, so a hold that cannot pay (used up, released, unknown) stops the message
// instead of letting it go out unpaid. A refusal is returned as a code; the message then fails.
// Posting is idempotent per message, so a retried dispatch posts once.
func (d *Dispatcher) postCampaignHold(ctx context.Context, m *store.Message) (string, error) {
	if m.Credits == 0 {
		return "", nil
	}
	a, err := d.batches.post.Do(ctx, *m)
	if err != nil {
		return "", err
	}
	return a.code, a.err
}

// quietHours is what quiet hours keep m to: its source's zone, its recipient's, and its
// recipient's state law (none when its organization turned state rules off at queueing).
func quietHours(m store.Message) quiethours.Message {
	return quiethours.Message{Zone: m.QuietTimezone, RecipientZone: m.RecipientTimezone, State: m.RecipientState}
}
