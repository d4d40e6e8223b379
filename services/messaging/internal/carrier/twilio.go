package carrier

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/chorus-sms/chorus/pkg/twilio"
)

// Twilio is a Provider sending through Twilio's Messages API (pkg/twilio), which it reads in
// the carrier's terms.
type Twilio struct {
	client *twilio.Client
}

var _ Provider = (*Twilio)(nil)

// NewTwilio returns the carrier calling Twilio with cfg.
func NewTwilio(cfg twilio.Config) (*Twilio, error) {
	c, err := twilio.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Twilio{client: c}, nil
}

// Name implements Provider.
func (t *Twilio) Name() string { return "twilio" }

// Send implements Provider.
func (t *Twilio) Send(ctx context.Context, m Outgoing) (Accepted, error) {
	sid, err := t.client.Send(ctx, twilio.SendRequest{
		From: m.From, To: m.To, Body: m.Body, MediaURLs: m.MediaURLs, SendAsMMS: m.MMS,
		StatusCallback: m.StatusCallbackURL, ValidityPeriod: m.ValidityPeriod,
	})
	if err != nil {
		return Accepted{}, fmt.Errorf("twilio: send message %s: %w", m.MessageID, fromTwilio(err))
	}
	return Accepted{ProviderMessageID: sid}, nil
}

// Find implements Provider with the messages Twilio lists as sent from l.From to l.To.
func (t *Twilio) Find(ctx context.Context, l Lookup) ([]Candidate, error) {
	sent, err := t.client.Sent(ctx, twilio.SentQuery{From: l.From, To: l.To, Since: l.Since, Until: l.Until})
	if err != nil {
		return nil, fmt.Errorf("twilio: look up message %s: %w", l.MessageID, fromTwilio(err))
	}
	out := make([]Candidate, 0, len(sent))
	for _, m := range sent {
		status, err := twilioStatus(m.Status)
		if err != nil {
			return nil, fmt.Errorf("twilio: look up message %s: status %q %w", l.MessageID, m.Status, err)
		}
		out = append(out, Candidate{ProviderMessageID: m.SID, Body: m.Body, Status: status, CreatedAt: m.CreatedAt})
	}
	return out, nil
}

// ParseTwilioInbound reads Twilio's incoming-message webhook (twilio.ParseInbound).
func ParseTwilioInbound(form url.Values) (Inbound, error) {
	in, err := twilio.ParseInbound(form)
	if err != nil {
		return Inbound{}, err
	}
	return Inbound{ProviderMessageID: in.MessageSID, From: in.From, To: in.To, Body: in.Body, MediaURLs: in.MediaURLs}, nil
}

// ParseTwilioStatus reads Twilio's status callback (twilio.ParseStatusCallback), its status
// as one of the Status* constants.
func ParseTwilioStatus(form url.Values) (Status, error) {
	st, err := twilio.ParseStatusCallback(form)
	if err != nil {
		return Status{}, err
	}
	status, err := twilioStatus(st.Status)
	if err != nil {
		return Status{}, &twilio.FieldError{Field: "MessageStatus", Reason: err.Error()}
	}
	return Status{
		ProviderMessageID: st.MessageSID, Status: status, ErrorCode: st.ErrorCode,
		OptOut: st.ErrorCode == twilio.CodeUnsubscribed,
	}, nil
}

// twilioStatus maps Twilio's message statuses onto ours. Statuses of inbound messages
// (receiving, received) have no place in the status of a message we sent.
func twilioStatus(s string) (string, error) {
	switch s {
	case "accepted", "scheduled", "queued", "sending":
		return StatusQueued, nil
	case "sent":
		return StatusSent, nil
	case "delivered", "read":
		return StatusDelivered, nil
	case "undelivered":
		return StatusUndelivered, nil
	case "failed", "canceled":
		return StatusFailed, nil
	default:
		return "", errors.New("is not a known message status")
	}
}

// fromTwilio classifies an error of pkg/twilio as the carrier errors the dispatcher acts on,
// keeping its text; the context's own errors are left as they are.
func fromTwilio(err error) error {
	var rejected *twilio.RejectedError
	switch {
	case errors.As(err, &rejected):
		return &RejectedError{Code: rejected.Code, Message: rejected.Message, OptOut: rejected.Code == twilio.CodeUnsubscribed}
	case errors.Is(err, twilio.ErrOutcomeUnknown):
		return &classified{ErrOutcomeUnknown, err}
	case errors.Is(err, twilio.ErrUnavailable):
		return &classified{ErrUnavailable, err}
	case errors.Is(err, twilio.ErrMisconfigured):
		return &classified{ErrMisconfigured, err}
	}
	return err
}

// classified is an error that also matches the carrier error of its kind.
type classified struct{ kind, err error }

func (e *classified) Error() string   { return e.err.Error() }
func (e *classified) Unwrap() []error { return []error{e.kind, e.err} }
