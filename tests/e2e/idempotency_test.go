package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Idempotency-Key (issue 28): every POST under /api takes one; see docs/api-notes.md.

// postKeyed posts body as the client with the Idempotency-Key key.
func (c *client) postKeyed(path, key string, body any) response {
	c.e.t.Helper()
	return c.doWith("POST", path, body, http.Header{"Idempotency-Key": {key}})
}

// flushRedis empties the stack's Redis database, as a Redis restart without persistence does.
func (e *env) flushRedis() {
	e.t.Helper()
	opts, err := redis.ParseURL(e.redisURL)
	require.NoError(e.t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	require.NoError(e.t, rdb.FlushDB(context.Background()).Err())
}

// A key's second request gets the first answer, byte for byte and marked replayed, error
// answers too; the key with another request is refused; it is the user's own; a malformed key
// is refused naming the header.
func TestIdempotencyKeyReplaysRefusesAndValidates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ada := e.newMember("write")
	e.member(ada.org, "bob-"+ada.org, "write")
	bob := e.as("bob-"+ada.org, ada.org)
	vip := map[string]any{"name": "VIP", "filter": map[string]any{"tags": []string{"vip"}}}

	first := ada.postKeyed("/api/segments", "seg-1", vip)
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Body)
	assert.Empty(t, first.Header.Get("Idempotent-Replayed"))
	again := ada.postKeyed("/api/segments", "seg-1", vip)
	assert.Equal(t, http.StatusCreated, again.Status)
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, first.Body, again.Body, "the first answer, byte for byte")
	var list struct{ Segments []any }
	require.NoError(t, json.Unmarshal(ada.do("GET", "/api/segments", nil).Body, &list))
	assert.Len(t, list.Segments, 1, "one segment created")

	for name, res := range map[string]response{
		"another body": ada.postKeyed("/api/segments", "seg-1", map[string]any{"name": "VIP 2", "filter": map[string]any{"tags": []string{"vip"}}}),
		"another path": ada.postKeyed("/api/contacts", "seg-1", vip),
	} {
		assert.Equal(t, http.StatusUnprocessableEntity, res.Status, "%s: %s", name, res.Body)
		assert.Equal(t, "IDEMPOTENCY_KEY_REUSED", res.ErrCode(t), name)
	}

	// Bob's seg-1 is his own: his request runs.
	theirs := bob.postKeyed("/api/segments", "seg-1", vip)
	assert.Empty(t, theirs.Header.Get("Idempotent-Replayed"), "%d %s", theirs.Status, theirs.Body)
	assert.NotEqual(t, first.Body, theirs.Body)

	// A refusal is an answer too: replayed, not run again.
	bad := ada.postKeyed("/api/segments", "seg-2", map[string]any{"name": ""})
	require.Equal(t, http.StatusBadRequest, bad.Status, "%s", bad.Body)
	badAgain := ada.postKeyed("/api/segments", "seg-2", map[string]any{"name": ""})
	assert.Equal(t, bad.Body, badAgain.Body)
	assert.Equal(t, "true", badAgain.Header.Get("Idempotent-Replayed"))

	for name, key := range map[string]string{"empty": "", "256 characters": strings.Repeat("k", 256), "a tab": "a\tb", "not ASCII": "clé"} {
		res := ada.postKeyed("/api/segments", key, vip)
		assert.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", name, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), name)
		assert.Contains(t, res.ErrFields(t), "Idempotency-Key", name)
	}
}

// The test of issue 28: a POST /api/campaigns whose answer is lost (the caller hangs up once
// the request is sent) is retried with its key: the campaign is created and sent once, and
// the retry gets the first answer, from PostgreSQL even after Redis lost everything.
func TestIdempotentCampaignWhoseAnswerIsLostIsSentOnce(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550190", 100)
	phones := []string{"+12025554101", "+12025554102", "+12025554103"}
	tn.contacts("lost", phones)
	body := map[string]any{"name": "Lost answer", "message": "Hello once", "contactFilter": tagged("lost"), "timezone": zoneWhere(12)}

	tn.sendAndHangUp("/api/campaigns", "campaign-1", body)
	// The caller would retry at once; the test waits until the first request made its
	// campaign, so the retry cannot be the one that runs.
	eventually(t, 30*time.Second, "the hung-up request to create its campaign", func() bool { return len(tn.campaigns()) == 1 })
	var retried response
	eventually(t, 30*time.Second, "the retry to find the first request's answer", func() bool {
		retried = tn.postKeyed("/api/campaigns", "campaign-1", body)
		if retried.Status == http.StatusConflict {
			require.Equal(t, "IDEMPOTENCY_KEY_IN_USE", retried.ErrCode(t))
			return false
		}
		return true
	})
	require.Equal(t, http.StatusCreated, retried.Status, "%s", retried.Body)
	assert.Equal(t, "true", retried.Header.Get("Idempotent-Replayed"), "the first request created it")
	id := campaign(retried.JSON(t)).str("id")
	tn.awaitSentOnce(id, phones)

	e.flushRedis()
	again := tn.postKeyed("/api/campaigns", "campaign-1", body)
	assert.Equal(t, http.StatusCreated, again.Status, "%s", again.Body)
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, retried.Body, again.Body)
	require.Len(t, tn.campaigns(), 1, "one campaign")
	for _, p := range phones {
		assert.Len(t, tn.thread(p), 1, "one message to %s", p)
	}
}

// sendAndHangUp writes a POST with its key on a connection of its own and closes it without
// reading the answer: an answer lost on the way back.
func (c *client) sendAndHangUp(path, key string, body any) {
	t := c.e.t
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest("POST", c.e.st.HTTPURL+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("x-organization-id", c.org)
	req.Header.Set("Idempotency-Key", key)
	conn, err := net.Dial("tcp", req.URL.Host)
	require.NoError(t, err)
	require.NoError(t, req.Write(conn))
	require.NoError(t, conn.Close())
}

// gatedCarrier is a fake Twilio that holds each message until release is called (or 20 s
// pass), telling arrived of each; it answers anything else at once.
func gatedCarrier(t *testing.T) (carrierURL string, arrived <-chan string, release func(), count func() int) {
	var mu sync.Mutex
	sent := 0
	got := make(chan string, 16)
	gate := make(chan struct{})
	carrier := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if text := r.PostForm.Get("Body"); text != "" {
			mu.Lock()
			sent++
			mu.Unlock()
			got <- text
			select {
			case <-gate:
			case <-time.After(20 * time.Second):
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"sid": "`+newSID()+`", "status": "queued"}`)
	}))
	t.Cleanup(carrier.Close)
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return carrier.URL, got, release, func() int {
		mu.Lock()
		defer mu.Unlock()
		return sent
	}
}

// While a reply is at the carrier, its key answers 409 IDEMPOTENCY_KEY_IN_USE, even after
// Redis lost its lock (the row in PostgreSQL still says running); once it is answered, the
// retry gets that answer and the carrier has seen one message.
func TestIdempotencyKeyInUseWhileItsReplyRuns(t *testing.T) {
	t.Parallel()
	const token = "twilio-e2e-token"
	carrierURL, arrived, release, count := gatedCarrier(t)
	e := newMsgEnv(t, twilioStack(carrierURL, token, nil))
	tn := e.newTenant("+12025550100", 100)
	const phone = "+12025550143"
	tn.contact(phone, "Ada", true)
	path := "/api/conversations/" + url.PathEscape(phone) + "/reply"
	hello := map[string]any{"message": "hello once"}

	first := make(chan response, 1)
	go func() { first <- tn.postKeyed(path, "reply-1", hello) }()
	select {
	case text := <-arrived:
		require.Equal(t, "hello once", text)
	case <-time.After(30 * time.Second):
		t.Fatal("the reply never reached the carrier")
	}

	running := tn.postKeyed(path, "reply-1", hello)
	assert.Equal(t, http.StatusConflict, running.Status, "%s", running.Body)
	assert.Equal(t, "IDEMPOTENCY_KEY_IN_USE", running.ErrCode(t))
	other := tn.postKeyed(path, "reply-1", map[string]any{"message": "hello twice"})
	assert.Equal(t, http.StatusUnprocessableEntity, other.Status, "%s", other.Body)
	e.flushRedis()
	afterFlush := tn.postKeyed(path, "reply-1", hello)
	assert.Equal(t, http.StatusConflict, afterFlush.Status, "%s", afterFlush.Body)

	release()
	res := <-first
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	replayed := tn.postKeyed(path, "reply-1", hello)
	assert.Equal(t, http.StatusOK, replayed.Status)
	assert.Equal(t, "true", replayed.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, res.Body, replayed.Body)
	assert.Equal(t, 1, count(), "one message reached the carrier")
}
