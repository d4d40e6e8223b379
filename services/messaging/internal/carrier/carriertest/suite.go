package carriertest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
)

// Answer is how a carrier's far end answers every send, for Harness.New.
type Answer int

const (
	Takes           Answer = iota // takes the message
	Refuses                       // refuses this message for good (a bad destination)
	RefusesOptedOut               // refuses it because the recipient unsubscribed from the sender
	Busy                          // cannot take it now (rate limited, down): nothing was sent
	Silent                        // may have taken it, but its answer is lost
	RefusesAccount                // refuses our credentials or account
)

// Harness makes the carrier under test for Run.
type Harness struct {
	// New returns the carrier with its far end answering every send, and every Find, as a; nil
	// when the carrier cannot be made to answer so (the sandbox takes every message).
	New func(t *testing.T, a Answer) *Carrier
	// To is a destination of a message whose status reports end in final (StatusDelivered,
	// StatusUndelivered or StatusFailed).
	To func(final string) string
	// Reports are the status reports the carrier makes about m, which it accepted as acc and
	// which ends in final, in order and as the dispatcher gets them (for Twilio: its signed
	// callbacks, checked and read as the webhook does).
	Reports func(t *testing.T, m carrier.Outgoing, acc carrier.Accepted, final string) []carrier.Status
}

// Carrier is a carrier under test and what its far end saw.
type Carrier struct {
	carrier.Provider
	// Received reads back the sends that reached the far end, in order and without their
	// MessageID; nil for a carrier without a far end (the sandbox).
	Received func() []carrier.Outgoing
	// Keeps says Find answers with the messages the carrier took; the sandbox keeps none (it
	// texts nobody, so a message whose acceptance was lost reached no one).
	Keeps bool
}

// Run checks that a carrier keeps the contract the dispatcher relies on: Send hands over SMS
// and MMS as asked under an id of the carrier's own, refusals and failures come back as the
// carrier errors the dispatcher tells apart (a permanent RejectedError, opt-outs among them;
// ErrUnavailable when nothing was sent and a retry is safe; ErrOutcomeUnknown, never
// retried, when the message may have gone; ErrMisconfigured), status reports name the
// message by that id and move forward to their final status, and Find answers what the
// carrier took inside the window, or fails, never answering empty when it cannot say.
func Run(t *testing.T, h Harness) {
	t.Run("SendSMS", func(t *testing.T) { testSend(t, h, message(h.To(carrier.StatusDelivered))) })
	t.Run("SendMMS", func(t *testing.T) {
		m := message(h.To(carrier.StatusDelivered))
		m.MediaURLs = []string{"https://cdn.example.com/a.jpg", "https://cdn.example.com/b.png"}
		testSend(t, h, m)
	})
	t.Run("SendMMSWithoutMedia", func(t *testing.T) {
		m := message(h.To(carrier.StatusDelivered))
		m.MMS = true
		testSend(t, h, m)
	})
	t.Run("SendWithValidityPeriod", func(t *testing.T) {
		m := message(h.To(carrier.StatusDelivered))
		m.ValidityPeriod = 90 * time.Minute
		testSend(t, h, m)
	})
	t.Run("IDsAreUnique", func(t *testing.T) { testUniqueIDs(t, h) })
	for _, final := range []string{carrier.StatusDelivered, carrier.StatusUndelivered, carrier.StatusFailed} {
		t.Run("Reports/"+final, func(t *testing.T) { testReports(t, h, final) })
	}
	for name, a := range map[string]Answer{
		"Refused": Refuses, "OptedOut": RefusesOptedOut, "Unavailable": Busy,
		"OutcomeUnknown": Silent, "Misconfigured": RefusesAccount,
	} {
		t.Run("Errors/"+name, func(t *testing.T) { testSendError(t, h, a) })
	}
	t.Run("Find", func(t *testing.T) { testFind(t, h) })
	for name, a := range map[string]Answer{"Unavailable": Busy, "Misconfigured": RefusesAccount} {
		t.Run("FindFails/"+name, func(t *testing.T) { testFindFails(t, h, a) })
	}
}

// message is an SMS to to, with a status callback naming it as the dispatcher's do.
func message(to string) carrier.Outgoing {
	id := uuid.NewString()
	return carrier.Outgoing{
		MessageID: id, From: "+14155550100", To: to, Body: "Your table is ready",
		StatusCallbackURL: "https://chorus.example/webhooks/status?messageId=" + id,
	}
}

// newCarrier is h.New(t, a), skipping the test when the carrier cannot answer so.
func newCarrier(t *testing.T, h Harness, a Answer) *Carrier {
	t.Helper()
	c := h.New(t, a)
	if c == nil {
		t.Skip("the carrier cannot be made to answer so")
	}
	return c
}

func testSend(t *testing.T, h Harness, m carrier.Outgoing) {
	c := newCarrier(t, h, Takes)
	acc, err := c.Send(t.Context(), m)
	require.NoError(t, err)
	assert.NotEmpty(t, acc.ProviderMessageID)
	if c.Received == nil {
		return
	}
	got := c.Received()
	require.Len(t, got, 1)
	want := m
	want.MessageID = ""
	// A message with media is an MMS whether or not it says so.
	want.MMS = m.MMS || len(m.MediaURLs) > 0
	assert.Equal(t, want, got[0], "the far end got the message as asked")
}

func testUniqueIDs(t *testing.T, h Harness) {
	c := newCarrier(t, h, Takes)
	seen := map[string]bool{}
	for range 3 {
		acc, err := c.Send(t.Context(), message(h.To(carrier.StatusDelivered)))
		require.NoError(t, err)
		assert.False(t, seen[acc.ProviderMessageID], "id %s given twice", acc.ProviderMessageID)
		seen[acc.ProviderMessageID] = true
	}
}

// statusOrder is the order a message moves through the statuses.
var statusOrder = []string{carrier.StatusQueued, carrier.StatusSent, carrier.StatusDelivered, carrier.StatusUndelivered, carrier.StatusFailed}

func testReports(t *testing.T, h Harness, final string) {
	c := newCarrier(t, h, Takes)
	m := message(h.To(final))
	acc, err := c.Send(t.Context(), m)
	require.NoError(t, err)
	reports := h.Reports(t, m, acc, final)
	require.NotEmpty(t, reports)
	last := -1
	for _, r := range reports {
		assert.Equal(t, acc.ProviderMessageID, r.ProviderMessageID, "a report names the message by the carrier's id")
		i := slices.Index(statusOrder, r.Status)
		require.GreaterOrEqual(t, i, 0, "status %q is one of the carrier's", r.Status)
		assert.Greater(t, i, last, "statuses move forward: %v", reports)
		last = i
		assert.False(t, r.OptOut, "a delivery report is no opt-out")
	}
	assert.Equal(t, final, reports[len(reports)-1].Status)
}

func testSendError(t *testing.T, h Harness, a Answer) {
	c := newCarrier(t, h, a)
	_, err := c.Send(t.Context(), message(h.To(carrier.StatusDelivered)))
	require.Error(t, err)
	var rejected *carrier.RejectedError
	is := map[error]bool{}
	for _, e := range []error{carrier.ErrUnavailable, carrier.ErrOutcomeUnknown, carrier.ErrMisconfigured} {
		is[e] = errors.Is(err, e)
	}
	want := map[error]bool{
		carrier.ErrUnavailable: a == Busy, carrier.ErrOutcomeUnknown: a == Silent, carrier.ErrMisconfigured: a == RefusesAccount,
	}
	assert.Equal(t, want, is, "%v", err)
	refused := a == Refuses || a == RefusesOptedOut
	require.Equal(t, refused, errors.As(err, &rejected), "%v", err)
	if refused {
		assert.Equal(t, a == RefusesOptedOut, rejected.OptOut, "an unsubscribed recipient is an opt-out")
	}
	if c.Received != nil {
		assert.Len(t, c.Received(), 1, "a send is never repeated once it may have gone, nor after a refusal")
	}
}

func testFind(t *testing.T, h Harness) {
	c := newCarrier(t, h, Takes)
	m := message(h.To(carrier.StatusDelivered))
	since := time.Now().Add(-time.Minute)
	acc, err := c.Send(t.Context(), m)
	require.NoError(t, err)
	l := carrier.Lookup{MessageID: m.MessageID, From: m.From, To: m.To, Since: since, Until: time.Now().Add(time.Minute)}

	found, err := c.Find(t.Context(), l)
	require.NoError(t, err)
	var ids []string
	for _, f := range found {
		assert.Contains(t, statusOrder, f.Status)
		assert.False(t, f.CreatedAt.Before(l.Since.Truncate(time.Second)) || f.CreatedAt.After(l.Until), "created inside the window")
		ids = append(ids, f.ProviderMessageID)
	}
	if c.Keeps {
		require.Equal(t, []string{acc.ProviderMessageID}, ids, "the message the carrier took")
		assert.Equal(t, m.Body, found[0].Body)
	} else {
		assert.Empty(t, found)
	}

	l.To = "+14155550999"
	found, err = c.Find(t.Context(), l)
	require.NoError(t, err)
	assert.Empty(t, found, "nothing was sent to another recipient")
	l.To, l.Since = m.To, time.Now().Add(time.Hour)
	l.Until = l.Since.Add(time.Minute)
	found, err = c.Find(t.Context(), l)
	require.NoError(t, err)
	assert.Empty(t, found, "nothing was sent after the message")
}

func testFindFails(t *testing.T, h Harness, a Answer) {
	c := newCarrier(t, h, a)
	found, err := c.Find(t.Context(), carrier.Lookup{
		MessageID: uuid.NewString(), From: "+14155550100", To: h.To(carrier.StatusDelivered),
		Since: time.Now().Add(-time.Minute), Until: time.Now(),
	})
	want := map[Answer]error{Busy: carrier.ErrUnavailable, RefusesAccount: carrier.ErrMisconfigured}[a]
	require.ErrorIs(t, err, want)
	assert.Nil(t, found, "a carrier that cannot say never answers empty")
}
