package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgtest"
)

// recordingCarrier is a fake Twilio that records the bodies it was given.
func recordingCarrier(t *testing.T) (url string, got func(body string) bool, count func() int) {
	var mu sync.Mutex
	received := map[string]bool{}
	carrier := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		received[r.PostForm.Get("Body")] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"sid": "`+newSID()+`", "status": "queued"}`)
	}))
	t.Cleanup(carrier.Close)
	got = func(body string) bool {
		mu.Lock()
		defer mu.Unlock()
		return received[body]
	}
	count = func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(received)
	}
	return carrier.URL, got, count
}

// replyRace posts n replies to phone at once, the i-th with text(i), and returns a function
// that waits for them and gives each one's status and error code.
func (tn *tenant) replyRace(t *testing.T, phone string, n int, text func(i int) string) (wait func() ([]int, []string)) {
	statuses, codes := make([]int, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := tn.do("POST", "/api/conversations/"+url.PathEscape(phone)+"/reply", map[string]any{"message": text(i)})
			statuses[i] = res.Status
			if res.Status != http.StatusOK {
				codes[i] = res.ErrCode(t)
			}
		}()
	}
	return func() ([]int, []string) {
		wg.Wait()
		return statuses, codes
	}
}

// A STOP holds back every reply from the moment it arrives, not from the moment contacts
// records it: while the STOP is held inside contacts (its contact's row locked by the test),
// fifty replies created meanwhile are all refused CONTACT_OPTED_OUT and none reaches the
// carrier; the STOP then completes.
func TestRepliesCreatedWhileAStopIsBeingRecordedAreRefused(t *testing.T) {
	const token = "twilio-e2e-token"
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	carrierURL, got, count := recordingCarrier(t)
	e := newMsgEnv(t, twilioStack(carrierURL, token, map[string]string{"CHORUS_DATABASE_URL": dsn}))
	tn := e.newTenant("+12025550100", 100)
	const phone = "+12025550143"
	tn.contact(phone, "Ada", true)
	db, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer db.Close(ctx)
	// The wait is watched from its own connection: inside the holding transaction,
	// pg_stat_activity would answer from the snapshot its first read took.
	watch, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer watch.Close(ctx)

	hold, err := db.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(ctx) }()
	_, err = hold.Exec(ctx, `SELECT 1 FROM contacts.contacts WHERE phone = $1 FOR UPDATE`, phone)
	require.NoError(t, err)
	stopped := make(chan response, 1)
	go func() {
		stopped <- e.webhook("/webhooks/twilio/inbound", token, "", url.Values{
			"MessageSid": {newSID()}, "From": {phone}, "To": {"+12025550100"}, "Body": {"STOP"}, "AccountSid": {"ACe2e"},
		})
	}()
	eventually(t, 15*time.Second, "the STOP to wait on the contact's row in contacts", func() bool {
		var waiting bool
		require.NoError(t, watch.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%contacts%')`).Scan(&waiting))
		return waiting
	})

	const replies = 50
	statuses, codes := tn.replyRace(t, phone, replies, func(i int) string { return fmt.Sprintf("reply %d", i) })()
	require.NoError(t, hold.Rollback(ctx))
	res := <-stopped
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)

	for i := range replies {
		assert.False(t, got(fmt.Sprintf("reply %d", i)), "reply %d reached the carrier after the STOP arrived", i)
		assert.Equal(t, http.StatusBadRequest, statuses[i], "reply %d", i)
		assert.Equal(t, "CONTACT_OPTED_OUT", codes[i], "reply %d", i)
	}
	assert.LessOrEqual(t, count(), 1, "only the STOP's confirmation went out")
	eventually(t, 15*time.Second, "the refused replies to cost nothing", func() bool { return tn.balance() == 100 })
}

// A STOP takes effect when it arrives: of fifty replies racing a contact's STOP, none created
// after the STOP arrived reaches the carrier, round after round, while those created before it
// may still go out. Each reply either goes out or is refused CONTACT_OPTED_OUT.
func TestNoReplyCreatedAfterAStopArrivedReachesTheCarrier(t *testing.T) {
	const token = "twilio-e2e-token"
	carrierURL, got, _ := recordingCarrier(t)
	e := newMsgEnv(t, twilioStack(carrierURL, token, nil))
	const rounds, replies = 12, 50
	tn := e.newTenant("+12025550100", rounds*replies+10)

	late := 0
	for round := range rounds {
		phone := fmt.Sprintf("+120255501%02d", 50+round)
		tn.contact(phone, "Ada", true)
		wait := tn.replyRace(t, phone, replies, func(i int) string { return fmt.Sprintf("round %d reply %d", round, i) })
		time.Sleep(time.Duration(15+3*round) * time.Millisecond) // the STOP lands at a different point of each round
		res := e.webhook("/webhooks/twilio/inbound", token, "", url.Values{
			"MessageSid": {newSID()}, "From": {phone}, "To": {"+12025550100"}, "Body": {"STOP"}, "AccountSid": {"ACe2e"},
		})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		statuses, codes := wait()

		for i, s := range statuses {
			if s != http.StatusOK {
				assert.Equal(t, http.StatusBadRequest, s, "round %d reply %d", round, i)
				assert.Equal(t, "CONTACT_OPTED_OUT", codes[i], "round %d reply %d", round, i)
			}
		}
		var stopAt time.Time
		created := map[string]time.Time{}
		thread := tn.do("GET", "/api/conversations/"+url.PathEscape(phone)+"/messages?limit=200", nil)
		require.Equal(t, http.StatusOK, thread.Status, "%s", thread.Body)
		for _, item := range thread.JSON(t)["messages"].([]any) {
			m := item.(map[string]any)
			at, err := time.Parse(time.RFC3339Nano, m["timestamp"].(string))
			require.NoError(t, err)
			if m["direction"] == "incoming" {
				stopAt = at
				continue
			}
			created[m["message"].(string)] = at
		}
		require.False(t, stopAt.IsZero(), "the STOP is in the thread")
		for i := range replies {
			body := fmt.Sprintf("round %d reply %d", round, i)
			if !got(body) {
				continue
			}
			assert.Equal(t, http.StatusOK, statuses[i], "%q reached the carrier", body)
			if at, ok := created[body]; assert.True(t, ok, "%q reached the carrier and is in the thread", body) && at.After(stopAt) {
				late++
				t.Errorf("%q was created %s after the STOP arrived and reached the carrier", body, at.Sub(stopAt))
			}
		}
		for i, s := range statuses {
			body := fmt.Sprintf("round %d reply %d", round, i)
			assert.Equal(t, s == http.StatusOK, got(body), "%q answered %d", body, s)
		}
	}
	assert.Zero(t, late)
}
