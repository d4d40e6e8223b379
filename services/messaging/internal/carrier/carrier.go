// Package carrier hands messages to SMS/MMS carriers and reads what carriers send back
// (inbound messages and delivery status callbacks).
package carrier

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Outgoing is one message to hand to a carrier.
type Outgoing struct {
	MessageID string // our id (UUID)
	From, To  string // E.164
	Body      string
	MediaURLs []string
	// MMS sends the message as an MMS even without media (forceRoute MMS, or AUTO with a text
	// too long for SMS: pkg/route); a message with media is an MMS anyway.
	MMS               bool
	StatusCallbackURL string // carries our message id, so an unknown outcome can be settled
	// ValidityPeriod, when positive, is how long the carrier may keep trying to deliver: a
	// bulk message must not arrive after the quiet-hours window closes.
	ValidityPeriod time.Duration
}

// Accepted is the carrier's acceptance of a message.
type Accepted struct {
	ProviderMessageID string
}

// Provider sends messages through one carrier.
//
// Send returns a *RejectedError when the carrier refused the message, ErrOutcomeUnknown when
// the message may or may not have gone out, ErrUnavailable when the carrier could not take it
// right now, and ErrMisconfigured when our account settings are wrong.
//
// Find answers, for a message whose hand-off we lost track of (the sending process died, or
// the carrier's answer never came), which messages the carrier holds from l.From to l.To
// created between l.Since and l.Until, newest first: the dispatcher decides which, if any, is
// ours. It returns an error when the carrier cannot say; an empty answer must mean the carrier
// has none, since the dispatcher then sends the message again.
type Provider interface {
	Name() string // "twilio", "sandbox"
	Send(ctx context.Context, m Outgoing) (Accepted, error)
	Find(ctx context.Context, l Lookup) ([]Candidate, error)
}

// Lookup is the question Find answers about one message of ours.
type Lookup struct {
	MessageID string // our id, for errors and logs
	From, To  string // E.164
	// Since and Until bound when the carrier can have created the message: its claim, and
	// the end of the window in which any call handing it over has ended.
	Since, Until time.Time
}

// Candidate is a message the carrier holds that may be the one looked up.
type Candidate struct {
	ProviderMessageID string
	Body              string
	// Status is one of the Status* constants; StatusQueued while the carrier has not sent it.
	Status    string
	CreatedAt time.Time
}

// RejectedError is the carrier refusing the message; nothing was sent, and resending the same
// message will be refused again.
type RejectedError struct {
	Code    string // the carrier's error code, e.g. Twilio's "21211"
	Message string
	OptOut  bool // the recipient unsubscribed from this sender (Twilio 21610)
}

func (e *RejectedError) Error() string {
	if e.Code == "" {
		return "carrier rejected the message: " + e.Message
	}
	return fmt.Sprintf("carrier rejected the message: %s (code %s)", e.Message, e.Code)
}

var (
	// ErrOutcomeUnknown means the request may have reached the carrier but no answer came
	// (timeout, connection lost after sending). The caller must not resend blindly: the status
	// callback settles it.
	ErrOutcomeUnknown = errors.New("carrier outcome unknown")

	// ErrUnavailable means the carrier did not take the message (rate limited, server errors,
	// unreachable) after all attempts; nothing was sent and a later retry is safe.
	ErrUnavailable = errors.New("carrier unavailable")

	// ErrMisconfigured means the carrier refused our credentials or account; every message will
	// fail the same way until the configuration is fixed.
	ErrMisconfigured = errors.New("carrier configuration rejected")
)

// Normalized delivery statuses, in the order a message moves through them.
const (
	StatusQueued      = "queued"
	StatusSent        = "sent"
	StatusDelivered   = "delivered"
	StatusUndelivered = "undelivered"
	StatusFailed      = "failed"
)

// Inbound is a message a carrier received for one of our numbers.
type Inbound struct {
	ProviderMessageID, From, To, Body string
	MediaURLs                         []string
}

// Status is a carrier's delivery status callback for a message we sent.
type Status struct {
	ProviderMessageID string
	Status            string // one of the Status* constants
	ErrorCode         string // the carrier's error code, empty when none
	// OptOut is the carrier saying the recipient unsubscribed from this sender (Twilio 21610),
	// which must be recorded as an opt-out, as a synchronous rejection with that code is.
	OptOut bool
}
