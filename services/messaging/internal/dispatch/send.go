package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/peers"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// Error codes stored on messages that failed before or at the carrier.
const (
	CodeCarrierUnavailable  = "CARRIER_UNAVAILABLE"
	CodeMisconfigured       = "CARRIER_MISCONFIGURED"
	CodeNotSendable         = "NOT_SENDABLE"
	CodeInsufficientCredits = apierr.ReasonInsufficientCredits
	CodeBillingSuspended    = apierr.ReasonBillingSuspended
	CodeHoldNotFound        = "HOLD_NOT_FOUND"
	CodeHoldExhausted       = apierr.ReasonHoldExhausted
	CodeHoldReleased        = apierr.ReasonHoldReleased
)

// Outcome is what became of one send.
type Outcome struct {
	Status            string // sent, failed, or sending when the carrier's answer was lost
	ProviderMessageID string
	ErrorCode         string
	Err               error // the carrier's error, for failed and sending
	// unsent is set when the carrier did not take the message and nothing is recorded yet:
	// the caller either retries later or fails it.
	unsent bool
}

// SendNow sends a stored message that is already "sending" (a reply) through its carrier,
// paced by its number's throttle, and settles its status and credits.
func (d *Dispatcher) SendNow(ctx context.Context, m store.Message) (Outcome, error) {
	granted, err := d.throttle.wait(ctx, m.OurNumber)
	if err != nil {
		return d.fail(ctx, m, CodeCarrierUnavailable, err)
	}
	m.DispatchedAt = &granted
	o, err := d.transmit(ctx, m)
	if err != nil {
		return o, err
	}
	if o.unsent {
		return d.fail(ctx, m, CodeCarrierUnavailable, o.Err)
	}
	return o, nil
}

// dispatchQueued sends one queued message: quiet hours, consent and credits are checked when
// it is taken off the queue. A positive wait asks to be called again after it.
func (d *Dispatcher) dispatchQueued(ctx context.Context, org, id uuid.UUID, lastAttempt bool) (time.Duration, error) {
	m, err := d.store.Message(ctx, org, id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil // deleted with its contact
	}
	if err != nil {
		return 0, err
	}
	if m.Status != store.StatusQueued {
		return 0, nil
	}
	if wait := untilSendable(m.QuietTimezone, time.Now()); wait > 0 {
		return wait, nil
	}
	if m.SourceKind != store.SourceSystem {
		ok, err := d.sendable(ctx, m)
		if err != nil {
			return 0, err
		}
		if !ok {
			_, err := d.fail(ctx, m, CodeNotSendable, nil)
			return 0, err
		}
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
			_, err := d.fail(ctx, m, code, nil)
			return 0, err
		}
	}
	granted, err := d.throttle.wait(ctx, m.OurNumber)
	if err != nil {
		return 0, err
	}
	claimed, err := d.store.Claim(ctx, m.ID, granted)
	if err != nil || !claimed {
		return 0, err
	}
	o, err := d.transmit(ctx, m)
	if err != nil {
		return 0, err
	}
	if o.unsent {
		if lastAttempt {
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

// sendable asks contacts whether the recipient is opted in and textable now.
func (d *Dispatcher) sendable(ctx context.Context, m store.Message) (bool, error) {
	resp, err := d.peers.Contacts.CheckSendable(peers.For(ctx, m.OrgID), &contactsv1.CheckSendableRequest{Phones: []string{m.ContactPhone}})
	if err != nil {
		return false, fmt.Errorf("check sendable: %w", err)
	}
	return len(resp.GetResults()) == 1 && resp.GetResults()[0].GetSendable(), nil
}

// placeOwnHold reserves a queued message's credits under a hold of its own id. A refusal
// (no credits, suspended account) is returned as a code; the message then fails.
func (d *Dispatcher) placeOwnHold(ctx context.Context, m *store.Message) (string, error) {
	code, err := PlaceHold(ctx, d.peers, m.OrgID, m.ID, m.Credits)
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
func PlaceHold(ctx context.Context, p *peers.Peers, org, message uuid.UUID, credits int32) (string, error) {
	_, err := p.Billing.PlaceHold(peers.For(ctx, org), &billingv1.PlaceHoldRequest{HoldId: message.String(), Credits: credits})
	switch reason := apierr.Reason(err); reason {
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

// transmit hands a "sending" message to its carrier and records the outcome. Only an error
// of our own (database, billing) is returned as err; carrier errors are in the Outcome.
func (d *Dispatcher) transmit(ctx context.Context, m store.Message) (Outcome, error) {
	p, err := d.provider(m.Provider)
	if err != nil {
		return d.fail(ctx, m, CodeMisconfigured, err)
	}
	var media []string
	media = append(media, m.MediaURLs...)
	acc, sendErr := p.Send(ctx, carrier.Outgoing{
		MessageID:         m.ID.String(),
		From:              m.OurNumber,
		To:                m.ContactPhone,
		Body:              m.Body,
		MediaURLs:         media,
		StatusCallbackURL: d.statusCallbackURL(p.Name(), m.ID),
	})
	var rejected *carrier.RejectedError
	switch {
	case sendErr == nil:
		// The carrier has it: record that before anything else, on a context that outlives
		// the caller's, since a lost record here is what the status callback must repair.
		ctx = context.WithoutCancel(ctx)
		if err := d.advanceDispatched(ctx, m, carrier.Status{ProviderMessageID: acc.ProviderMessageID, Status: carrier.StatusSent}); err != nil {
			return Outcome{}, err
		}
		return Outcome{Status: store.StatusSent, ProviderMessageID: acc.ProviderMessageID}, nil
	case errors.As(sendErr, &rejected):
		if rejected.OptOut {
			d.recordCarrierOptOut(ctx, m)
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

// recordCarrierOptOut records in contacts that the carrier says the recipient unsubscribed.
func (d *Dispatcher) recordCarrierOptOut(ctx context.Context, m store.Message) {
	_, err := d.peers.Contacts.SetConsent(peers.For(ctx, m.OrgID), &contactsv1.SetConsentRequest{
		Phone: m.ContactPhone, OptedIn: false, OccurredAt: timestamppb.Now(), Source: "carrier:unsubscribed",
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
		d.recordCarrierOptOut(ctx, m)
	}
	if s.Status == carrier.StatusQueued {
		return nil // the carrier has it; nothing moves
	}
	return d.advance(ctx, m.ID, s)
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

func (d *Dispatcher) advanceAt(ctx context.Context, id uuid.UUID, s carrier.Status, dispatchedAt *time.Time) error {
	_, err := d.advanceWith(ctx, s, func(tx pgx.Tx, c store.StatusChange) (store.Message, bool, error) {
		c.DispatchedAt = dispatchedAt
		return d.store.AdvanceStatus(ctx, tx, id, c)
	})
	return err
}

// statusMove applies a status change inside tx and returns the message as it was before.
type statusMove func(tx pgx.Tx, c store.StatusChange) (before store.Message, changed bool, err error)

// advanceWith moves a message's status with move, publishes the change in the same
// transaction, and settles its credits (settle). It reports whether the status changed.
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
		return publishStatus(ctx, tx, before, s)
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, ErrUnknownMessage
	}
	if err != nil || !changed {
		return false, err
	}
	leaving := before.Status == store.StatusQueued || before.Status == store.StatusSending
	if leaving || s.Status == carrier.StatusFailed {
		return true, d.settle(ctx, before, s.Status)
	}
	return true, nil
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
	bctx := peers.For(ctx, m.OrgID)
	if status == carrier.StatusFailed {
		if _, err := d.peers.Billing.RefundDebit(bctx, &billingv1.RefundDebitRequest{MessageId: m.ID.String()}); err != nil {
			return fmt.Errorf("refund credits of message %s: %w", m.ID, err)
		}
	} else if m.Credits > 0 {
		if _, err := d.peers.Billing.PostHold(bctx, &billingv1.PostHoldRequest{HoldId: m.HoldID, MessageId: m.ID.String(), Credits: m.Credits}); err != nil {
			return fmt.Errorf("consume credits of message %s: %w", m.ID, err)
		}
	}
	if m.HoldID == m.ID.String() {
		if _, err := d.peers.Billing.ReleaseHold(bctx, &billingv1.ReleaseHoldRequest{HoldId: m.HoldID}); err != nil {
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
	_, err := d.peers.Billing.PostHold(peers.For(ctx, m.OrgID), &billingv1.PostHoldRequest{HoldId: m.HoldID, MessageId: m.ID.String(), Credits: m.Credits})
	switch reason := apierr.Reason(err); {
	case err == nil:
		return "", nil
	case reason == CodeHoldExhausted || reason == CodeHoldReleased:
		return reason, nil
	case status.Code(err) == codes.NotFound:
		return CodeHoldNotFound, nil
	default:
		return "", fmt.Errorf("post message %s to hold %s: %w", m.ID, m.HoldID, err)
	}
}
