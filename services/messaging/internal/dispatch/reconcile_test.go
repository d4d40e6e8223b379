package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/twilio"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier/carriertest"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// listingTwilio is an httptest Twilio Messages API that records what it takes and answers the
// Messages list as Twilio does; failList makes the list answer 500.
type listingTwilio struct {
	*httptest.Server
	mu       sync.Mutex
	taken    []twilio.Message
	failList atomic.Bool
}

func newListingTwilio(t *testing.T) (*listingTwilio, carrier.Provider) {
	tw := &listingTwilio{}
	var p carrier.Provider
	tw.Server, p = carriertest.Twilio(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if tw.failList.Load() {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			twilio.ServeList(w, r, tw.messages())
			return
		}
		_ = r.ParseForm()
		tw.mu.Lock()
		sid := fmt.Sprintf("SM%032d", len(tw.taken)+1)
		tw.taken = append(tw.taken, twilio.Message{SID: sid, From: r.PostForm.Get("From"), To: r.PostForm.Get("To"),
			Body: r.PostForm.Get("Body"), Status: "sent", Direction: "outbound-api", DateCreated: time.Now().UTC().Format(twilio.DateLayout)})
		tw.mu.Unlock()
		twilio.Accept(w, sid)
	})
	return tw, p
}

func (tw *listingTwilio) messages() []twilio.Message {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return slices.Clone(tw.taken)
}

// claimAsDeadProcess claims queued message id as a process that then died would have: the
// message is "sending", its dispatch job done, nothing recorded of any carrier call.
func (f *fixture) claimAsDeadProcess(id uuid.UUID) store.Message {
	f.t.Helper()
	claimed, err := f.store.Claim(context.Background(), id, time.Now())
	require.NoError(f.t, err)
	require.True(f.t, claimed)
	return f.message(id)
}

// A message whose process died after the carrier took it is found at the carrier: recorded
// sent under the carrier's id, never sent again.
func TestLookupRecordsAMessageTheCarrierTook(t *testing.T) {
	f := newFixture(t)
	tw, live := newListingTwilio(t)
	d := f.dispatcher(live, 100, 0) // not started: nothing but the sweep moves the message
	ctx := context.Background()
	id := f.queue(d, "twilio", "+12025550143")
	m := f.claimAsDeadProcess(id)
	_, err := live.Send(ctx, carrier.Outgoing{MessageID: id.String(), From: m.OurNumber, To: m.ContactPhone, Body: m.Body})
	require.NoError(t, err) // the carrier has it; its answer died with the process

	require.NoError(t, d.resolveUnknown(ctx, time.Now().Add(time.Second)))
	got := f.message(id)
	assert.Equal(t, store.StatusSent, got.Status)
	assert.Equal(t, tw.messages()[0].SID, got.ProviderMessageID)
	assert.Len(t, tw.messages(), 1, "not sent again")
}

// A message whose process died before the carrier got it is not found there: it goes back
// to the queue, the same row, with a dispatch job of its own, and is sent once; a second
// sweep finds nothing left to do.
func TestLookupRequeuesAMessageTheCarrierNeverGot(t *testing.T) {
	f := newFixture(t)
	tw, live := newListingTwilio(t)
	d := f.dispatcher(live, 100, 0)
	ctx := context.Background()
	id := f.queue(d, "twilio", "+12025550143")
	f.claimAsDeadProcess(id)

	require.NoError(t, d.resolveUnknown(ctx, time.Now().Add(time.Second)))
	assert.Equal(t, store.StatusQueued, f.message(id).Status)
	var requeues, jobs int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT requeues FROM messages WHERE id = $1`, id).Scan(&requeues))
	assert.Equal(t, 1, requeues)
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1 AND args->>'message_id' = $2
		AND (args->>'requeue')::int = 1 AND state = 'available'`, sendArgs{}.Kind(), id.String()).Scan(&jobs))
	assert.Equal(t, 1, jobs, "a dispatch job of its own, beside the first one's")

	start(t, d)
	sent := f.awaitStatus(id, store.StatusSent)
	require.Len(t, tw.messages(), 1)
	assert.Equal(t, tw.messages()[0].SID, sent.ProviderMessageID)
	require.NoError(t, d.resolveUnknown(ctx, time.Now().Add(time.Second)))
	assert.Len(t, tw.messages(), 1, "sent once")
}

// The carrier's message already recorded on another of ours (the same text to the same
// number) is not the lost one's: the lost one is sent. A carrier that cannot answer leaves
// the message as it is, for the next sweep.
func TestLookupTellsOurMessagesApartAndWaitsForAnAnswer(t *testing.T) {
	f := newFixture(t)
	tw, live := newListingTwilio(t)
	d := f.dispatcher(live, 100, 0)
	ctx := context.Background()
	first := f.queue(d, "twilio", "+12025550143")
	_, err := d.dispatchQueued(ctx, f.org, first, attempt{})
	require.NoError(t, err)
	require.Equal(t, store.StatusSent, f.message(first).Status)
	lost := f.queue(d, "twilio", "+12025550143") // the same text to the same number
	f.claimAsDeadProcess(lost)

	tw.failList.Store(true)
	require.Error(t, d.resolveUnknown(ctx, time.Now().Add(time.Second)))
	assert.Equal(t, store.StatusSending, f.message(lost).Status, "no answer: nothing moves")

	tw.failList.Store(false)
	require.NoError(t, d.resolveUnknown(ctx, time.Now().Add(time.Second)))
	assert.Equal(t, store.StatusQueued, f.message(lost).Status, "the carrier's one message is the first's")
	assert.Len(t, tw.messages(), 1)
}

// A claim younger than the lookup window is not looked up: its hand-off may still be under way.
func TestLookupLeavesRecentClaims(t *testing.T) {
	f := newFixture(t)
	_, live := newListingTwilio(t)
	d := f.dispatcher(live, 100, 0)
	ctx := context.Background()
	id := f.queue(d, "twilio", "+12025550143")
	f.claimAsDeadProcess(id)
	require.NoError(t, d.resolveUnknown(ctx, time.Now().Add(-d.lookupAfter())))
	assert.Equal(t, store.StatusSending, f.message(id).Status)
}

// Two lost messages with different texts to one contact, the carrier holding only the first:
// the second is not taken for the first's carrier message, whichever is looked up first (a
// carrier may rewrite a text, but another of our messages' exact text is that message's).
func TestLookupDoesNotTakeAnotherMessagesText(t *testing.T) {
	f := newFixture(t)
	tw, live := newListingTwilio(t)
	d := f.dispatcher(live, 100, 0)
	ctx := context.Background()
	kept := f.queue(d, "twilio", "+12025550143")
	dropped := f.queue(d, "twilio", "+12025550143")
	_, err := f.pool.Exec(ctx, `UPDATE messages SET body = 'Reply 2' WHERE id = $1`, dropped)
	require.NoError(t, err)
	k := f.claimAsDeadProcess(kept)
	lost := f.claimAsDeadProcess(dropped)
	_, err = live.Send(ctx, carrier.Outgoing{MessageID: kept.String(), From: k.OurNumber, To: k.ContactPhone, Body: k.Body})
	require.NoError(t, err)

	cutoff := time.Now().Add(time.Second)
	require.NoError(t, d.resolveOne(ctx, lost, cutoff), "the second looked up first")
	assert.Equal(t, store.StatusQueued, f.message(dropped).Status, "the carrier's one message has the first's text")
	require.NoError(t, d.resolveUnknown(ctx, cutoff))
	got := f.message(kept)
	assert.Equal(t, store.StatusSent, got.Status)
	assert.Equal(t, tw.messages()[0].SID, got.ProviderMessageID)
}
