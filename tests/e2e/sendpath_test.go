package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgtest"
)

// A reply the carrier took is a success for the caller even when billing cannot settle it at
// that moment: the message is in the thread as sent, its credit stays held, and once billing
// answers again the reconciler debits it exactly once.
func TestReplyTheCarrierTookSucceedsWhenBillingCannotSettle(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	e := newMsgEnv(t, map[string]string{"CHORUS_DATABASE_URL": dsn, "CHORUS_SENDING_TIMEOUT": "1s"})
	tn := e.newTenant("+12025550100", 5)
	tn.contact("+12025550143", "Ada", true)
	db, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer db.Close(ctx)

	// Billing itself fails every debit (its ledger refuses the row), as when its database is down.
	_, err = db.Exec(ctx, `CREATE FUNCTION billing.refuse_debits() RETURNS trigger LANGUAGE plpgsql AS
			$$BEGIN RAISE EXCEPTION 'billing is down'; END$$;
		CREATE TRIGGER refuse_debits BEFORE INSERT ON billing.ledger FOR EACH ROW WHEN (NEW.kind = 'debit')
			EXECUTE FUNCTION billing.refuse_debits()`)
	require.NoError(t, err)

	res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "settled later"})
	require.Equal(t, http.StatusOK, res.Status, "the carrier took the message: %s", res.Body)
	body := res.JSON(t)
	assert.Equal(t, true, body["success"])
	log := body["messageLog"].(map[string]any)
	assert.Equal(t, "sent", log["status"])
	id := log["id"].(string)
	msgs := tn.thread("+12025550143")
	require.Len(t, msgs, 1)
	assert.Equal(t, id, msgs[0]["id"])
	assert.Contains(t, []any{"sent", "delivered"}, msgs[0]["status"])

	debits := func() (count, held int) {
		require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'debit' AND key = $1), coalesce(sum(held_delta), 0)
			FROM billing.ledger`, id).Scan(&count, &held))
		return count, held
	}
	time.Sleep(1500 * time.Millisecond) // sweeps run and fail while billing is down
	count, held := debits()
	require.Equal(t, []int{0, 1}, []int{count, held}, "nothing debited yet; the credit stays held")
	assert.Equal(t, 4.0, tn.balance())

	_, err = db.Exec(ctx, `DROP TRIGGER refuse_debits ON billing.ledger`)
	require.NoError(t, err)
	eventually(t, 15*time.Second, "the reconciler to settle the reply", func() bool {
		count, held := debits()
		return count == 1 && held == 0
	})
	time.Sleep(1500 * time.Millisecond) // more sweeps: nothing more is charged
	count, held = debits()
	assert.Equal(t, []int{1, 0}, []int{count, held}, "debited once, nothing left held")
	assert.Equal(t, 4.0, tn.balance())
}

// Replies waiting on their number's throttle when the contact texts STOP are not handed to the
// carrier after the opt-out is recorded: consent is checked again when the throttle lets each
// one go. A reply refused then answers 400 CONTACT_OPTED_OUT, is recorded failed, and costs
// nothing.
func TestReplyWaitingOnTheThrottleIsNotSentAfterStop(t *testing.T) {
	const token = "twilio-e2e-token"
	var mu sync.Mutex
	var received []time.Time // when the carrier got each reply
	carrier := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if strings.HasPrefix(r.PostForm.Get("Body"), "reply") {
			mu.Lock()
			received = append(received, time.Now())
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"sid": "`+newSID()+`", "status": "queued"}`)
	}))
	defer carrier.Close()
	e := newMsgEnv(t, twilioStack(carrier.URL, token, map[string]string{"CHORUS_NUMBER_RATE": "2"}))
	tn := e.newTenant("+12025550100", 30)
	tn.contact("+12025550143", "Ada", true)
	sentSoFar := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(received)
	}

	const replies = 20
	statuses := make([]int, replies)
	codes := make([]string, replies)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "reply " + string(rune('a'+i))})
			statuses[i] = res.Status
			if res.Status != http.StatusOK {
				codes[i] = res.ErrCode(t)
			}
		}()
	}
	eventually(t, 15*time.Second, "the first replies to reach the carrier", func() bool { return sentSoFar() >= 2 })
	res := e.webhook("/webhooks/twilio/inbound", token, "", url.Values{
		"MessageSid": {newSID()}, "From": {"+12025550143"}, "To": {"+12025550100"}, "Body": {"STOP"}, "AccountSid": {"ACe2e"},
	})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	optedOut := time.Now() // the opt-out is recorded before the webhook answers
	wg.Wait()

	mu.Lock()
	for _, at := range received {
		assert.True(t, at.Before(optedOut), "a reply reached the carrier %s after the opt-out was recorded", at.Sub(optedOut))
	}
	sent := len(received)
	mu.Unlock()
	refused := 0
	for i, s := range statuses {
		if s == http.StatusOK {
			continue
		}
		refused++
		assert.Equal(t, http.StatusBadRequest, s)
		assert.Equal(t, "CONTACT_OPTED_OUT", codes[i])
	}
	assert.Equal(t, replies, sent+refused, "every reply either went out or was refused")
	assert.Positive(t, refused, "the STOP came while replies were waiting")
	eventually(t, 15*time.Second, "the sent replies to be charged and the refused ones to cost nothing", func() bool {
		return tn.balance() == float64(30-sent)
	})
	failed := 0
	for _, m := range tn.thread("+12025550143") {
		if m["direction"] == "outgoing" && m["status"] == "failed" {
			failed++
		}
	}
	// A reply refused before it was stored (its recipient check came after the STOP) leaves no row.
	assert.Positive(t, failed, "a reply refused at hand-off is recorded failed")
	assert.LessOrEqual(t, failed, refused)
}
