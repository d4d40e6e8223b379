package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/twilio"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
)

// A reply whose carrier answer was lost, and for which no status callback comes, is failed
// once CHORUS_SENDING_TIMEOUT has passed: its held credit comes back, nothing is charged, the
// change is published, and a late "delivered" callback changes nothing. A reply the carrier
// accepted is left alone by the sweep.
func TestReconcileFailsRepliesWhoseOutcomeStaysUnknown(t *testing.T) {
	t.Parallel()
	const token = "twilio-e2e-token"
	var callbacks sync.Map // body → the status callback path the carrier was given
	carrier := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		body := r.PostForm.Get("Body")
		cb, _ := url.Parse(r.PostForm.Get("StatusCallback"))
		callbacks.Store(body, cb.RequestURI())
		if body == "lost" {
			// The request is read, then the connection drops before any answer: the
			// message may or may not have gone out.
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		twilio.Accept(w, "SMreconcile0000000000000000000001")
	}))
	defer carrier.Close()
	dsn := stackDB.NewDatabase(t)
	redisURL, rdb := redistest.New(t)
	e := newMsgEnv(t, twilioStack(carrier.URL, token, map[string]string{
		"CHORUS_DATABASE_URL": dsn, "CHORUS_REDIS_URL": redisURL, "CHORUS_SENDING_TIMEOUT": "1s",
	}))
	tn := e.newTenant("+12025550100", 10)
	tn.contact("+12025550143", "Ada", true)

	reply := func(body string) (id, status string) {
		res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": body})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		log := res.JSON(t)["messageLog"].(map[string]any)
		return log["id"].(string), log["status"].(string)
	}
	accepted, status := reply("accepted")
	require.Equal(t, "sent", status)
	lost, status := reply("lost")
	require.Equal(t, "sent", status, "the carrier's answer was lost; the API calls a message handed to the carrier sent")

	statusOf := func(id string) string {
		for _, m := range tn.thread("+12025550143") {
			if m["id"] == id {
				return m["status"].(string)
			}
		}
		t.Fatalf("message %s is not in the thread", id)
		return ""
	}
	eventually(t, 15*time.Second, "the lost reply to be failed", func() bool { return statusOf(lost) == "failed" })
	// The accepted reply was older than the lost one, so the sweep that failed the lost one
	// saw it past the timeout too.
	assert.Equal(t, "sent", statusOf(accepted), "a message the carrier took is not the sweep's")
	// The hold is released just after the status commits (billing is called after messaging's
	// transaction), so the balance is awaited, not read at once.
	eventually(t, 15*time.Second, "the lost reply's hold to be released, only the accepted reply charged", func() bool {
		return tn.balance() == 9.0
	})

	ev := statusEvent(t, rdb, tn.org, lost)
	assert.Equal(t, "failed", ev.GetStatus())
	assert.Equal(t, "CARRIER_OUTCOME_UNKNOWN", ev.GetErrorCode())
	assert.Zero(t, ev.GetCredits())

	callback := func(body, status string) {
		path, ok := callbacks.Load(body)
		require.True(t, ok)
		res := e.webhook(path.(string), token, "", url.Values{
			"MessageSid": {"SMlate"}, "MessageStatus": {status}, "AccountSid": {"ACe2e"},
		})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	}
	callback("lost", "delivered")
	callback("accepted", "delivered")
	assert.Equal(t, "failed", statusOf(lost), "a late callback does not revive a failed message")
	assert.Equal(t, "delivered", statusOf(accepted))
	assert.Equal(t, 9.0, tn.balance(), "the late callback charges nothing")

	ctx := context.Background()
	db, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer db.Close(ctx)
	var debited []string
	var held int
	require.NoError(t, db.QueryRow(ctx, `SELECT coalesce(array_agg(key) FILTER (WHERE kind = 'debit'), '{}'), coalesce(sum(held_delta), 0)
		FROM billing.ledger`).Scan(&debited, &held))
	assert.Equal(t, []string{accepted}, debited, "only the accepted reply is debited")
	assert.Zero(t, held, "no credits left held")
}

// statusEvent waits for a published status change of message on the stack's stream and
// returns the latest one.
func statusEvent(t *testing.T, rdb *redis.Client, org, message string) *eventsv1.MessageStatusChanged {
	t.Helper()
	var found *eventsv1.MessageStatusChanged
	eventually(t, 15*time.Second, "the status change of "+message+" to be published", func() bool {
		for _, ev := range statusChanges(t, rdb, org) {
			if ev.GetMessageId() == message {
				found = ev
			}
		}
		return found != nil
	})
	return found
}

// A reply whose carrier answer was lost is looked up at the carrier once the carrier call
// window has passed: one the carrier took is recorded sent under the carrier's id and charged
// once, never sent again; one the carrier never got is sent again, once, and charged once.
func TestReconcileAsksTheCarrierAboutLostReplies(t *testing.T) {
	t.Parallel()
	const token = "twilio-e2e-token"
	var mu sync.Mutex
	var taken []twilio.Message
	dropped := false
	carrier := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodGet {
			twilio.ServeList(w, r, slices.Clone(taken))
			return
		}
		_ = r.ParseForm()
		body := r.PostForm.Get("Body")
		lose := body == "kept" || (body == "dropped" && !dropped)
		if body == "dropped" && !dropped {
			dropped = true // read, then lost before the carrier made anything of it
		} else {
			taken = append(taken, twilio.Message{SID: fmt.Sprintf("SMreconcile%023d", len(taken)), From: r.PostForm.Get("From"),
				To: r.PostForm.Get("To"), Body: body, Status: "sent", Direction: "outbound-api",
				DateCreated: time.Now().UTC().Format(twilio.DateLayout)})
		}
		if lose { // the connection drops before any answer: the sender cannot know
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		twilio.Accept(w, taken[len(taken)-1].SID)
	}))
	defer carrier.Close()
	e := newMsgEnv(t, twilioStack(carrier.URL, token, map[string]string{"CHORUS_CARRIER_CALL_TIMEOUT": "1s"}))
	tn := e.newTenant("+12025550100", 10)
	tn.contact("+12025550143", "Ada", true)

	ids := map[string]string{}
	for _, body := range []string{"kept", "dropped"} {
		res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": body})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		ids[body] = res.JSON(t)["messageLog"].(map[string]any)["id"].(string)
	}
	carrierHas := func(body string) (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range taken {
			if m.Body == body {
				n++
			}
		}
		return n
	}
	eventually(t, 30*time.Second, "the dropped reply sent again", func() bool { return carrierHas("dropped") == 1 })
	eventually(t, 15*time.Second, "both replies charged", func() bool { return tn.balance() == 8.0 })
	time.Sleep(3 * time.Second) // sweeps go on every second
	assert.Equal(t, 1, carrierHas("kept"), "the reply the carrier took is not sent again")
	assert.Equal(t, 1, carrierHas("dropped"))
	assert.Equal(t, 8.0, tn.balance(), "each charged once")
	for _, m := range tn.thread("+12025550143") {
		assert.Equal(t, "sent", m["status"], "%s", m["message"])
		assert.Contains(t, []string{ids["kept"], ids["dropped"]}, m["id"], "no second message made")
	}
	assert.Len(t, tn.thread("+12025550143"), 2)
}
