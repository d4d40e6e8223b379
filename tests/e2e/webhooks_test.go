package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hook is one request a receiver got.
type hook struct {
	ID, Timestamp, Signature string
	Body                     []byte
}

// JSON is the request's body decoded.
func (h hook) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(h.Body, &m), "%s", h.Body)
	return m
}

// verifies says h is signed with secret per Standard Webhooks, computed here from the
// scheme's definition (HMAC-SHA256 of id.timestamp.body, keyed by the base64 after whsec_).
func (h hook) verifies(t *testing.T, secret string) bool {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.ID + "." + h.Timestamp + "." + string(h.Body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for sig := range strings.SplitSeq(h.Signature, " ") {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// receiver is an endpoint on loopback that records what it gets and answers with answer
// (200 when nil).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	hooks  []hook
	answer func(n int, w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.hooks = append(rc.hooks, hook{ID: r.Header.Get("webhook-id"), Timestamp: r.Header.Get("webhook-timestamp"),
			Signature: r.Header.Get("webhook-signature"), Body: body})
		n := len(rc.hooks)
		rc.mu.Unlock()
		if rc.answer != nil {
			rc.answer(n, w, r)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// got is what the receiver has been sent so far.
func (rc *receiver) got() []hook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hook(nil), rc.hooks...)
}

// ofType is the hooks of event type typ.
func (rc *receiver) ofType(t *testing.T, typ string) []hook {
	var out []hook
	for _, h := range rc.got() {
		if h.JSON(t)["type"] == typ {
			out = append(out, h)
		}
	}
	return out
}

// createWebhook registers url for events and answers the endpoint's id and secret.
func (c *client) createWebhook(url string, events ...string) (id, secret string) {
	t := c.e.t
	t.Helper()
	res := c.do("POST", "/api/webhooks", map[string]any{"url": url, "events": events})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	body := res.JSON(t)
	return body["endpoint"].(map[string]any)["id"].(string), body["secret"].(string)
}

// endpoint is the organization's endpoint id as listed.
func (c *client) endpoint(id string) map[string]any {
	t := c.e.t
	t.Helper()
	res := c.do("GET", "/api/webhooks", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	for _, ep := range res.list(t) {
		if ep["id"] == id {
			return ep
		}
	}
	t.Fatalf("no endpoint %s in %s", id, res.Body)
	return nil
}

// list is a bare-array answer decoded.
func (r response) list(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &out), "%s", r.Body)
	return out
}

// deliveries are an endpoint's deliveries, newest first.
func (c *client) deliveries(endpoint string) []map[string]any {
	t := c.e.t
	t.Helper()
	res := c.do("GET", "/api/webhooks/"+endpoint+"/deliveries", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	return res.list(t)
}

// statusCodes are a delivery's attempts' status codes (0 for none).
func statusCodes(d map[string]any) []int {
	var out []int
	for _, a := range d["attempts"].([]any) {
		code, _ := a.(map[string]any)["statusCode"].(float64)
		out = append(out, int(code))
	}
	return out
}

// Endpoints are created with a secret shown once, listed without it, validated field by field,
// deleted once, and another organization's behave as missing ones.
func TestWebhookEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.newMember("write")

	res := c.do("POST", "/api/webhooks", map[string]any{"url": "https://93.184.216.34/hooks", "events": []string{"message.received", "contact.opted_out"}})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	created := res.JSON(t)
	secret := created["secret"].(string)
	assert.True(t, strings.HasPrefix(secret, "whsec_"), secret)
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(key), 24)
	ep := created["endpoint"].(map[string]any)
	id := ep["id"].(string)
	assert.Equal(t, "https://93.184.216.34/hooks", ep["url"])
	assert.ElementsMatch(t, []any{"message.received", "contact.opted_out"}, ep["events"])
	assert.Equal(t, "active", ep["status"])
	assert.Nil(t, ep["disabledReason"])

	list := c.do("GET", "/api/webhooks", nil)
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Body)
	eps := list.list(t)
	require.Len(t, eps, 1)
	assert.Equal(t, id, eps[0]["id"])
	assert.NotContains(t, string(list.Body), secret, "the secret is shown once")
	assert.NotContains(t, eps[0], "secret")

	for name, tc := range map[string]struct {
		body  map[string]any
		field string
	}{
		"no url":         {map[string]any{"events": []string{"message.received"}}, "url"},
		"relative url":   {map[string]any{"url": "/hooks", "events": []string{"message.received"}}, "url"},
		"ftp":            {map[string]any{"url": "ftp://93.184.216.34/", "events": []string{"message.received"}}, "url"},
		"private":        {map[string]any{"url": "http://10.0.0.8/hooks", "events": []string{"message.received"}}, "url"},
		"metadata":       {map[string]any{"url": "http://169.254.169.254/latest/meta-data", "events": []string{"message.received"}}, "url"},
		"no events":      {map[string]any{"url": "https://93.184.216.34/"}, "events"},
		"unknown event":  {map[string]any{"url": "https://93.184.216.34/", "events": []string{"message.received", "nope"}}, "events[1]"},
		"unknown field":  {map[string]any{"url": "https://93.184.216.34/", "events": []string{"message.received"}, "x": 1}, ""},
		"events not arr": {map[string]any{"url": "https://93.184.216.34/", "events": "message.received"}, ""},
	} {
		res := c.do("POST", "/api/webhooks", tc.body)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", name, res.Body)
		if tc.field != "" {
			assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), name)
			assert.Contains(t, res.ErrFields(t), tc.field, name)
		}
	}

	// Read access lists but does not create; another organization sees none of it.
	reader := e.as("reader-"+c.org, c.org)
	e.member(c.org, "reader-"+c.org, "read")
	assert.Equal(t, http.StatusOK, reader.do("GET", "/api/webhooks", nil).Status)
	assert.Equal(t, http.StatusForbidden, reader.do("POST", "/api/webhooks", map[string]any{"url": "https://93.184.216.34/", "events": []string{"message.received"}}).Status)
	other := e.newMember("write")
	assert.Empty(t, other.do("GET", "/api/webhooks", nil).list(t))
	assert.Equal(t, http.StatusNotFound, other.do("GET", "/api/webhooks/"+id+"/deliveries", nil).Status)
	assert.Equal(t, http.StatusNotFound, other.do("DELETE", "/api/webhooks/"+id, nil).Status)
	assert.Equal(t, http.StatusNotFound, c.do("GET", "/api/webhooks/not-a-uuid/deliveries", nil).Status)
	assert.Empty(t, c.deliveries(id), "none yet")
	for _, limit := range []string{"201", "-1", "x"} {
		res := c.do("GET", "/api/webhooks/"+id+"/deliveries?limit="+limit, nil)
		require.Equal(t, http.StatusBadRequest, res.Status, "limit %s: %s", limit, res.Body)
		assert.Contains(t, res.ErrFields(t), "limit", limit)
	}
	assert.Equal(t, http.StatusNotFound, c.do("POST", "/api/webhooks/"+id+"/deliveries/"+id+"/retry", nil).Status)

	del := c.do("DELETE", "/api/webhooks/"+id, nil)
	require.Equal(t, http.StatusOK, del.Status, "%s", del.Body)
	assert.Equal(t, true, del.JSON(t)["deleted"])
	assert.Equal(t, http.StatusNotFound, c.do("DELETE", "/api/webhooks/"+id, nil).Status)
	assert.Empty(t, c.do("GET", "/api/webhooks", nil).list(t))
}

// Without the development setting, endpoints on loopback are refused too.
func TestWebhookLoopbackRefusedInProduction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"CHORUS_WEBHOOKS_ALLOW_LOOPBACK": "false"})
	c := e.newMember("write")
	for _, url := range []string{"http://127.0.0.1:9/hooks", "http://localhost:9/hooks", "http://[::1]:9/"} {
		res := c.do("POST", "/api/webhooks", map[string]any{"url": url, "events": []string{"message.received"}})
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", url, res.Body)
		assert.Contains(t, res.ErrFields(t), "url", url)
	}
}

// An inbound text reaches the endpoint as message.received, signed per Standard Webhooks, with
// the message as the thread shows it; the delivery lists its successful attempt. An
// endpoint subscribed to other events, or of another organization, gets nothing.
func TestWebhookDeliversMessageReceived(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550701", 0)
	rc := newReceiver(t, nil)
	id, secret := tn.createWebhook(rc.URL+"/in", "message.received")
	other := newReceiver(t, nil)
	tn.createWebhook(other.URL, "contact.opted_in")
	stranger := e.newTenant("+13125550702", 0)
	strangerRC := newReceiver(t, nil)
	stranger.createWebhook(strangerRC.URL, "message.received")

	e.text(tn.number, "+12025550123", "Is the store open?")
	eventually(t, 15*time.Second, "message.received delivered", func() bool { return len(rc.got()) > 0 })
	h := rc.got()[0]
	assert.True(t, h.verifies(t, secret), "signature %q", h.Signature)
	body := h.JSON(t)
	assert.Equal(t, "message.received", body["type"])
	assert.Equal(t, "+12025550123", body["phoneNumber"])
	_, err := time.Parse(time.RFC3339Nano, body["timestamp"].(string))
	assert.NoError(t, err)
	data := body["data"].(map[string]any)
	assert.Equal(t, "incoming", data["direction"])
	assert.Equal(t, "Is the store open?", data["message"])
	thread := tn.thread("+12025550123")
	require.NotEmpty(t, thread)
	assert.Equal(t, thread[0], data, "the message as the thread shows it")

	eventually(t, 10*time.Second, "the delivery listed as succeeded", func() bool {
		ds := tn.deliveries(id)
		return len(ds) == 1 && ds[0]["status"] == "succeeded"
	})
	d := tn.deliveries(id)[0]
	assert.Equal(t, h.ID, d["id"], "the delivery's id is the webhook-id")
	assert.Equal(t, "message.received", d["eventType"])
	assert.Equal(t, []int{200}, statusCodes(d))
	assert.Nil(t, d["nextAttemptAt"])

	e.text(stranger.number, "+12025550124", "Hello")
	eventually(t, 15*time.Second, "the other organization's delivery", func() bool { return len(strangerRC.got()) > 0 })
	assert.Len(t, rc.got(), 1, "one delivery, to its own organization's endpoint")
	assert.Empty(t, other.got(), "not subscribed to message.received")
}

// STOP and START reach the endpoint as contact.opted_out and contact.opted_in with the contact
// as GET /api/contacts/{id} shows it.
func TestWebhookDeliversOptOutAndOptIn(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550711", 0)
	rc := newReceiver(t, nil)
	_, secret := tn.createWebhook(rc.URL, "contact.opted_out", "contact.opted_in")
	contact := tn.contact("+12025550131", "Opal", false)

	e.text(tn.number, "+12025550131", "STOP")
	eventually(t, 15*time.Second, "contact.opted_out delivered", func() bool { return len(rc.ofType(t, "contact.opted_out")) > 0 })
	out := rc.ofType(t, "contact.opted_out")[0]
	assert.True(t, out.verifies(t, secret))
	data := out.JSON(t)["data"].(map[string]any)
	assert.Equal(t, contact, data["id"])
	assert.Equal(t, false, data["isOptedIn"])
	assert.NotNil(t, data["optedOutAt"])
	assert.Equal(t, "Opal", data["firstName"])

	e.text(tn.number, "+12025550131", "START")
	eventually(t, 15*time.Second, "contact.opted_in delivered", func() bool { return len(rc.ofType(t, "contact.opted_in")) > 0 })
	data = rc.ofType(t, "contact.opted_in")[0].JSON(t)["data"].(map[string]any)
	assert.Equal(t, contact, data["id"])
	assert.Equal(t, true, data["isOptedIn"])
	assert.Empty(t, rc.ofType(t, "message.received"), "not subscribed")
}

// A reply's status reports reach the endpoint as message.status.
func TestWebhookDeliversMessageStatus(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550721", 10)
	rc := newReceiver(t, nil)
	tn.createWebhook(rc.URL, "message.status")
	tn.contact("+12025550141", "Stan", true)
	res := tn.do("POST", "/api/conversations/%2B12025550141/reply", map[string]any{"message": "Your order shipped"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)

	eventually(t, 15*time.Second, "sent and delivered reported", func() bool {
		seen := map[any]bool{}
		for _, h := range rc.ofType(t, "message.status") {
			seen[h.JSON(t)["data"].(map[string]any)["status"]] = true
		}
		return seen["sent"] && seen["delivered"]
	})
	thread := tn.thread("+12025550141")
	for _, h := range rc.ofType(t, "message.status") {
		body := h.JSON(t)
		assert.Equal(t, "+12025550141", body["phoneNumber"])
		data := body["data"].(map[string]any)
		assert.Contains(t, []any{"sent", "delivered"}, data["status"])
		assert.Equal(t, "Your order shipped", data["message"])
		delete(data, "status")
		want := maps.Clone(thread[0])
		delete(want, "status")
		assert.Equal(t, want, data, "the message as the thread shows it, with the status reported")
	}
}

// A failing endpoint is retried with the same webhook-id until it answers 2xx; a redirect is a
// failure and is not followed.
func TestWebhookRetriesWithTheSameID(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, map[string]string{"CHORUS_WEBHOOKS_RETRY_SCHEDULE": "100ms,100ms,100ms"})
	tn := e.newTenant("+13125550731", 0)
	var followed atomic.Bool
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/elsewhere":
			followed.Store(true)
		case n == 1:
			w.WriteHeader(http.StatusInternalServerError)
		case n == 2:
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}
	})
	id, secret := tn.createWebhook(rc.URL+"/in", "message.received")
	e.text(tn.number, "+12025550151", "hello")

	eventually(t, 30*time.Second, "the third attempt succeeded", func() bool {
		ds := tn.deliveries(id)
		return len(ds) == 1 && ds[0]["status"] == "succeeded"
	})
	d := tn.deliveries(id)[0]
	assert.Equal(t, []int{500, 302, 200}, statusCodes(d))
	hooks := rc.got()
	require.Len(t, hooks, 3)
	assert.False(t, followed.Load(), "the redirect was not followed")
	for _, h := range hooks {
		assert.Equal(t, d["id"], h.ID, "the same webhook-id on every attempt")
		assert.True(t, h.verifies(t, secret))
		assert.Equal(t, hooks[0].Body, h.Body)
	}
	attempts := d["attempts"].([]any)
	assert.NotNil(t, attempts[0].(map[string]any)["error"])
	assert.Nil(t, attempts[2].(map[string]any)["error"])
}

// An endpoint that fails every attempt longer than the disable bound is disabled and says why;
// its delivery fails once the schedule is spent. A manual retry enables it again and delivers
// with the same webhook-id.
func TestWebhookDisablesAFailingEndpointAndRetriesByHand(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, map[string]string{"CHORUS_WEBHOOKS_RETRY_SCHEDULE": "100ms,100ms", "CHORUS_WEBHOOKS_DISABLE_AFTER": "50ms"})
	tn := e.newTenant("+13125550741", 0)
	var mu sync.Mutex
	healthy := false
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !healthy {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	id, _ := tn.createWebhook(rc.URL, "message.received")
	witness := newReceiver(t, nil) // a healthy endpoint of the same organization
	tn.createWebhook(witness.URL, "message.received")
	e.text(tn.number, "+12025550161", "first")

	eventually(t, 30*time.Second, "the endpoint disabled", func() bool { return tn.endpoint(id)["status"] == "disabled" })
	ep := tn.endpoint(id)
	assert.Contains(t, ep["disabledReason"], "HTTP 503")
	eventually(t, 30*time.Second, "the delivery failed", func() bool {
		ds := tn.deliveries(id)
		return len(ds) == 1 && ds[0]["status"] == "failed"
	})
	delivery := tn.deliveries(id)[0]
	tried := len(rc.got())

	// A disabled endpoint gets no new deliveries: once the witness has the next events, they
	// were fanned out, to it alone.
	e.text(tn.number, "+12025550161", "second")
	e.text(tn.number, "+12025550162", "third")
	eventually(t, 15*time.Second, "the next events fanned out", func() bool { return len(witness.got()) == 3 })
	mu.Lock()
	healthy = true
	mu.Unlock()
	res := tn.do("POST", "/api/webhooks/"+id+"/deliveries/"+delivery["id"].(string)+"/retry", nil)
	require.Equal(t, http.StatusAccepted, res.Status, "%s", res.Body)
	assert.Equal(t, "pending", res.JSON(t)["status"])
	eventually(t, 15*time.Second, "the retried delivery succeeded", func() bool {
		ds := tn.deliveries(id)
		return len(ds) == 1 && ds[0]["status"] == "succeeded"
	})
	hooks := rc.got()
	require.Len(t, hooks, tried+1)
	assert.Equal(t, delivery["id"], hooks[len(hooks)-1].ID)
	assert.Equal(t, "first", hooks[len(hooks)-1].JSON(t)["data"].(map[string]any)["message"])
	assert.Equal(t, "active", tn.endpoint(id)["status"])
	assert.Nil(t, tn.endpoint(id)["disabledReason"])
	assert.Equal(t, http.StatusNotFound, tn.do("POST", "/api/webhooks/"+id+"/deliveries/"+id+"/retry", nil).Status)
}

// An endpoint that never answers holds only its own share of the workers: another
// organization's events are delivered meanwhile.
func TestWebhookSlowEndpointDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, map[string]string{"CHORUS_WEBHOOKS_WORKERS": "4", "CHORUS_WEBHOOKS_PER_ENDPOINT": "2"})
	release := make(chan struct{})
	var once sync.Once
	slow := newReceiver(t, func(int, http.ResponseWriter, *http.Request) { <-release })
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the receiver closes
	stuck := e.newTenant("+13125550751", 0)
	stuck.createWebhook(slow.URL, "message.received")
	for i := range 12 {
		e.text(stuck.number, "+1202555017"+string(rune('0'+i%10)), "hello")
	}
	eventually(t, 15*time.Second, "the slow endpoint holding its share", func() bool { return len(slow.got()) >= 2 })

	fast := newReceiver(t, nil)
	other := e.newTenant("+13125550752", 0)
	other.createWebhook(fast.URL, "message.received")
	e.text(other.number, "+12025550181", "hi")
	eventually(t, 8*time.Second, "the other organization's delivery, while the slow endpoint still holds its requests", func() bool {
		return len(fast.got()) == 1
	})
	assert.LessOrEqual(t, len(slow.got()), 2, "at most its share of attempts at once")
	once.Do(func() { close(release) })
}

// A campaign that completes reaches the endpoint once as campaign.completed, with the campaign
// as GET /api/campaigns/{id} showed it on completion.
func TestWebhookDeliversCampaignCompleted(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550761", 100)
	rc := newReceiver(t, nil)
	id, secret := tn.createWebhook(rc.URL, "campaign.completed")
	tn.contacts("webhook", []string{"+12025551201", "+12025551202", "+12025551203"})
	created := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Hooked", "message": "Hi {{firstName}}", "contactFilter": tagged("webhook"), "timezone": zoneWhere(12),
	}), http.StatusCreated)
	campaign := created.str("id")
	tn.awaitStatus(campaign, "completed", 60*time.Second)

	eventually(t, 15*time.Second, "campaign.completed delivered", func() bool { return len(rc.got()) > 0 })
	h := rc.got()[0]
	assert.True(t, h.verifies(t, secret))
	body := h.JSON(t)
	assert.Equal(t, "campaign.completed", body["type"])
	data := body["data"].(map[string]any)
	assert.Equal(t, campaign, data["id"])
	assert.Equal(t, "completed", data["status"])
	assert.Equal(t, "Hooked", data["name"])
	assert.EqualValues(t, 3, data["totalCount"])
	assert.NotNil(t, data["completedAt"])
	// Later snapshots of the completed campaign (delivery reports moving its counters) are not
	// completions.
	eventually(t, 30*time.Second, "the delivery receipts counted", func() bool { return tn.getCampaign(campaign).num("deliveryRate") == 100 })
	eventually(t, 15*time.Second, "the delivery listed as succeeded", func() bool {
		ds := tn.deliveries(id)
		return len(ds) == 1 && ds[0]["status"] == "succeeded"
	})
	assert.Len(t, rc.ofType(t, "campaign.completed"), 1)
}

// Each answer reaches the endpoint as poll.response (the answer as the participant list shows
// it, with its poll, participant and phone), and the poll's completion once as poll.completed
// (the poll as GET /api/polls/{id} shows it).
func TestWebhookDeliversPollResponsesAndCompletion(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550771", 100)
	rc := newReceiver(t, nil)
	_, secret := tn.createWebhook(rc.URL, "poll.response", "poll.completed")
	ada := "+12025554101"
	tn.contacts("hooked", []string{ada})
	poll := tn.createPoll(pollBody("Hooked poll"))["id"].(string)
	tn.startPoll(poll, "hooked")

	tn.awaitAsked(ada, 1)
	e.text(tn.number, ada, "B")
	tn.awaitAsked(ada, 2)
	e.text(tn.number, ada, "L")
	tn.awaitPollStatus(poll, "completed")

	eventually(t, 15*time.Second, "two answers and the completion delivered", func() bool {
		return len(rc.ofType(t, "poll.response")) == 2 && len(rc.ofType(t, "poll.completed")) == 1
	})
	_, ps := tn.participants(poll, "")
	answered := map[any]any{} // by question number
	for _, r := range ps[ada]["responses"].([]any) {
		answered[r.(map[string]any)["questionNumber"]] = r
	}
	for _, h := range rc.ofType(t, "poll.response") {
		assert.True(t, h.verifies(t, secret))
		body := h.JSON(t)
		assert.Equal(t, poll, body["pollId"])
		assert.Equal(t, ps[ada]["participantId"], body["participantId"])
		assert.Equal(t, ps[ada]["contactId"], body["contactId"])
		assert.Equal(t, ada, body["phoneNumber"])
		data := body["data"].(map[string]any)
		assert.Equal(t, answered[data["questionNumber"]], data, "the answer as the participant list shows it")
	}
	done := rc.ofType(t, "poll.completed")[0].JSON(t)["data"].(map[string]any)
	assert.Equal(t, poll, done["id"])
	assert.Equal(t, "completed", done["status"])
	assert.Equal(t, "Hooked poll", done["name"])
	assert.NotNil(t, done["completedAt"])
}

// An import that completes reaches the endpoint once as import.completed, signed, with the
// import as GET /api/contacts/imports/{id} showed it on completion; the document lists the
// event type among those an endpoint may subscribe to.
func TestWebhookDeliversImportCompleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.newMember("write")
	rc := newReceiver(t, nil)
	id, secret := c.createWebhook(rc.URL, "import.completed")
	assert.Equal(t, []any{"import.completed"}, c.endpoint(id)["events"])

	imp := c.importDone(importFile)
	eventually(t, 15*time.Second, "import.completed delivered", func() bool { return len(rc.got()) > 0 })
	h := rc.got()[0]
	assert.True(t, h.verifies(t, secret))
	body := h.JSON(t)
	assert.Equal(t, "import.completed", body["type"])
	data := body["data"].(map[string]any)
	assert.Equal(t, imp["id"], data["id"])
	assert.Equal(t, "completed", data["status"])
	for _, count := range []string{"total", "processed", "created", "merged", "rejected"} {
		assert.Equal(t, imp[count], data[count], count)
	}
	assert.EqualValues(t, 7, data["total"])
	assert.EqualValues(t, 4, data["rejected"])
	assert.Equal(t, imp["completedAt"], data["completedAt"])
	assert.Contains(t, data, "lookupsPending")
	eventually(t, 15*time.Second, "the delivery listed as succeeded", func() bool {
		ds := c.deliveries(id)
		return len(ds) == 1 && ds[0]["status"] == "succeeded" && ds[0]["eventType"] == "import.completed"
	})
	assert.Len(t, rc.got(), 1, "once")

	res := c.do("GET", "/openapi.json", nil)
	require.Equal(t, http.StatusOK, res.Status)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Items struct {
						Enum []string `json:"enum"`
					} `json:"items"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(res.Body, &doc))
	assert.Contains(t, doc.Components.Schemas["v1CreateEndpointRequest"].Properties["events"].Items.Enum, "import.completed")
}
