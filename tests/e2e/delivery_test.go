package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Carriers repeat callbacks and deliver them out of order; whatever arrives, a message ends
// in the first final status reported and never moves back.
func TestStatusCallbacksShuffledAndDuplicatedEndRight(t *testing.T) {
	t.Parallel()
	const token = "twilio-e2e-token"
	var callbacks sync.Map // our message id → the callback URL Twilio was given
	var n atomic.Int32
	carrier := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		cb, _ := url.Parse(r.PostForm.Get("StatusCallback"))
		callbacks.Store(r.PostForm.Get("Body"), cb.RequestURI())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"sid": "SMe2e`+string(rune('A'+n.Add(1)))+`", "status": "queued"}`)
	}))
	defer carrier.Close()
	e := newMsgEnv(t, twilioStack(carrier.URL, token, nil))
	tn := e.newTenant("+12025550100", 10)
	tn.contact("+12025550143", "Ada", true)

	sequences := map[string][]string{
		"one":   {"delivered", "sent", "delivered", "queued", "sent"},
		"two":   {"sent", "undelivered", "delivered", "sent", "failed"},
		"three": {"failed", "failed", "sent"},
	}
	want := map[string]string{"one": "delivered", "two": "undelivered", "three": "failed"}
	for body := range sequences {
		res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": body})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		assert.Equal(t, "twilio", res.JSON(t)["provider"])
	}
	for body, seq := range sequences {
		path, ok := callbacks.Load(body)
		require.True(t, ok)
		for _, status := range seq {
			res := e.webhook(path.(string), token, "", url.Values{"MessageSid": {"SMother"}, "MessageStatus": {status}, "AccountSid": {"ACe2e"}})
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		}
	}
	got := map[string]string{}
	for _, m := range tn.thread("+12025550143") {
		got[m["message"].(string)] = m["status"].(string)
	}
	assert.Equal(t, want, got)
	assert.Equal(t, 8.0, tn.balance(), "the delivered and the undelivered SMS cost one credit each; the one the carrier failed after sending is refunded, however the callbacks went")

	path, _ := callbacks.Load("one")
	res := e.webhook(path.(string), "not-the-token", "", url.Values{"MessageSid": {"SMx"}, "MessageStatus": {"failed"}})
	assert.Equal(t, http.StatusForbidden, res.Status, "a forged callback is refused")
}

// Fifty replies at once with credits for twenty: exactly twenty go out, thirty get 402, and
// the balance ends at zero.
func TestConcurrentRepliesNeverOverspend(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 20)
	tn.contact("+12025550143", "Ada", true)
	var wg sync.WaitGroup
	statuses := make([]int, 50)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "one of fifty"}).Status
		}()
	}
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	assert.Equal(t, map[int]int{http.StatusOK: 20, http.StatusPaymentRequired: 30}, count)
	assert.Equal(t, 0.0, tn.balance())
	sent := 0
	for _, m := range tn.thread("+12025550143") {
		if m["direction"] == "outgoing" {
			sent++
		}
	}
	assert.Equal(t, 20, sent, "refused replies are not logged")
}
