package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// campaign is a decoded campaign body.
type campaign map[string]any

func (c campaign) str(k string) string  { s, _ := c[k].(string); return s }
func (c campaign) num(k string) float64 { n, _ := c[k].(float64); return n }

// campaignOf reads the campaign in a 2xx answer, failing on any other status.
func campaignOf(t *testing.T, res response, status int) campaign {
	t.Helper()
	require.Equal(t, status, res.Status, "%s", res.Body)
	return campaign(res.JSON(t))
}

// getCampaign reads GET /api/campaigns/{id}.
func (tn *tenant) getCampaign(id string) campaign {
	return campaignOf(tn.e.t, tn.do("GET", "/api/campaigns/"+id, nil), http.StatusOK)
}

// awaitStatus polls the campaign until its status is want and returns it.
func (tn *tenant) awaitStatus(id, want string, within time.Duration) campaign {
	t := tn.e.t
	t.Helper()
	var c campaign
	eventually(t, within, "campaign "+want, func() bool {
		c = tn.getCampaign(id)
		return c.str("status") == want
	})
	return c
}

// Drafts: created with a name only, updated field by field, validated field by field; the
// state moves of the spec and the issue; tenancy of the campaign, its segment and its number.
func TestCampaignDraftsAndStateMoves(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550170", 100)
	other := e.newTenant("+13125550171", 100)

	d := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "Spring"}), http.StatusCreated)
	id := d.str("id")
	assert.Equal(t, "draft", d.str("status"))
	assert.Equal(t, "text", d.str("channel"))
	assert.Equal(t, "AUTO", d.str("forceRoute"))
	assert.Equal(t, true, d["normalizeText"])
	assert.Nil(t, d["segmentId"])
	assert.Nil(t, d["contactFilter"])
	assert.Nil(t, d["completedAt"])

	res := tn.do("POST", "/api/campaigns/draft", map[string]any{"message": "no name"})
	require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	assert.Contains(t, res.ErrFields(t), "name")

	// Only sent fields change; sending one audience clears the other.
	d = campaignOf(t, tn.do("PUT", "/api/campaigns/"+id+"/draft", map[string]any{"message": "Hi {{firstName}}", "contactFilter": map[string]any{"tags": []string{"vip"}}}), http.StatusOK)
	assert.Equal(t, "Spring", d.str("name"))
	assert.Equal(t, "Hi {{firstName}}", d.str("message"))
	assert.Equal(t, map[string]any{"tags": []any{"vip"}, "tagsLogic": "OR"}, d["contactFilter"])
	seg := tn.do("POST", "/api/segments", map[string]any{"name": "VIP", "filter": map[string]any{"tags": []string{"vip"}}})
	require.Equal(t, http.StatusCreated, seg.Status, "%s", seg.Body)
	segID := seg.JSON(t)["id"].(string)
	d = campaignOf(t, tn.do("PUT", "/api/campaigns/"+id+"/draft", map[string]any{"segmentId": segID}), http.StatusOK)
	assert.Equal(t, segID, d.str("segmentId"))
	assert.Nil(t, d["contactFilter"], "segmentId replaces contactFilter")
	assert.Equal(t, "Hi {{firstName}}", d.str("message"))

	// Validation: 400 naming the field.
	valid := map[string]any{"name": "X", "message": "Hello", "segmentId": segID, "timezone": zoneWhere(12)}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range valid {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	faq := []map[string]any{}
	for i := range 6 {
		faq = append(faq, map[string]any{"question": fmt.Sprint("q", i), "answer": "a"})
	}
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"name missing", with("name", nil), "name"},
		{"message missing", with("message", nil), "message"},
		{"no audience", with("segmentId", nil), "segmentId"},
		{"both audiences", with("contactFilter", map[string]any{"tags": []string{"a"}}), "contactFilter"},
		{"tagsLogic", with("segmentId", nil), "contactFilter.tagsLogic"},
		{"A/B without variants", with("isAbTest", true), "messageVariantB"},
		{"auto-replies without any answer", with("autoReplyEnabled", true), "autoReplyEnabled"},
		{"six FAQ replies", with("faqReplies", faq), "faqReplies"},
		{"channel", with("channel", "voice"), "channel"},
		{"timezone", with("timezone", "Mars/Olympus"), "timezone"},
		{"scheduledFor", with("scheduledFor", "tomorrow at noon"), "scheduledFor"},
		{"forceRoute", with("forceRoute", "FAST"), "forceRoute"},
		{"mediaUrl scheme", with("mediaUrl", "ftp://example.com/a.png"), "mediaUrl"},
		{"mediaUrl private", with("mediaUrl", "http://127.0.0.1/a.png"), "mediaUrl"},
		{"segment of another org", with("segmentId", segOf(t, other)), "segmentId"},
		{"missing segment", with("segmentId", "0190f0e0-0000-7000-8000-000000000001"), "segmentId"},
		{"number of another org", with("fromPhoneNumberId", other.numberID), "fromPhoneNumberId"},
		{"draftId malformed", with("draftId", "nope"), "draftId"},
	} {
		body := c.body
		if c.name == "tagsLogic" {
			body["contactFilter"] = map[string]any{"tags": []string{"a"}, "tagsLogic": "XOR"}
		}
		res := tn.do("POST", "/api/campaigns", body)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", c.name, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), c.name)
		assert.Contains(t, res.ErrFields(t), c.field, c.name)
	}

	// Scheduled: the draft is promoted in place (same id, one record).
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	s := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{"draftId": id, "scheduledFor": at.Format(time.RFC3339)}), http.StatusCreated)
	assert.Equal(t, id, s.str("id"))
	assert.Equal(t, "scheduled", s.str("status"))
	assert.Equal(t, at.Format(time.RFC3339), s.str("scheduledFor"))
	assert.Equal(t, tn.numberID, s.str("fromPhoneNumberId"), "the default number, fixed at submission")
	list := tn.do("GET", "/api/campaigns", nil)
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Body)
	var items []map[string]any
	require.NoError(t, jsonUnmarshal(list.Body, &items), "a bare array")
	require.Len(t, items, 1, "promoting a draft makes no second record")
	assert.Equal(t, "scheduled", items[0]["status"])

	res = tn.do("PUT", "/api/campaigns/"+id+"/draft", map[string]any{"name": "Changed"})
	require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	assert.Equal(t, "INVALID_STATE", res.ErrCode(t))
	for _, verb := range []string{"pause", "resume"} {
		res := tn.do("POST", "/api/campaigns/"+id+"/"+verb, nil)
		require.Equal(t, http.StatusConflict, res.Status, "%s a scheduled campaign: %s", verb, res.Body)
		assert.Equal(t, "INVALID_STATE", res.ErrCode(t))
	}
	// Cancel: a scheduled campaign returns to draft, and its scheduled start does nothing.
	c := campaignOf(t, tn.do("POST", "/api/campaigns/"+id+"/cancel", nil), http.StatusOK)
	assert.Equal(t, "draft", c.str("status"))
	res = tn.do("POST", "/api/campaigns/"+id+"/cancel", nil)
	require.Equal(t, http.StatusConflict, res.Status, "%s", res.Body)
	assert.Equal(t, "INVALID_STATE", res.ErrCode(t))
	campaignOf(t, tn.do("PUT", "/api/campaigns/"+id+"/draft", map[string]any{"name": "Spring again"}), http.StatusOK)

	// The detail adds the sending number and the display metrics.
	detail := tn.getCampaign(id)
	assert.Equal(t, map[string]any{"id": tn.numberID, "number": "+13125550170", "isDefault": true}, detail["phoneNumber"])
	metrics, _ := detail["displayMetrics"].(map[string]any)
	require.NotNil(t, metrics, "%v", detail)
	assert.Contains(t, metrics, "audienceSize")

	// Another organization's campaign is a missing one, on every route.
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/campaigns/" + id}, {"PUT", "/api/campaigns/" + id + "/draft"},
		{"POST", "/api/campaigns/" + id + "/pause"}, {"POST", "/api/campaigns/" + id + "/resume"}, {"POST", "/api/campaigns/" + id + "/cancel"},
	} {
		var body any
		if r.method == "PUT" {
			body = map[string]any{"name": "mine now"}
		}
		res := other.do(r.method, r.path, body)
		assert.Equal(t, http.StatusNotFound, res.Status, "%s %s: %s", r.method, r.path, res.Body)
	}
	res = other.do("POST", "/api/campaigns", map[string]any{"draftId": id, "name": "X", "message": "m", "segmentId": segOf(t, other)})
	require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	assert.Contains(t, res.ErrFields(t), "draftId")
	assert.Equal(t, http.StatusNotFound, tn.do("GET", "/api/campaigns/not-a-uuid", nil).Status)
	assert.Equal(t, "Spring again", tn.getCampaign(id).str("name"), "untouched by the other organization")

	// An immediate send outside the window of its zone is refused, naming the next start.
	night := zoneWhere(3)
	res = tn.do("POST", "/api/campaigns", with("timezone", night))
	require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	assert.Equal(t, "QUIET_HOURS", res.ErrCode(t))
	assert.Contains(t, string(res.Body), "08:00", "the next window start is in the message")
	list = tn.do("GET", "/api/campaigns", nil)
	require.NoError(t, jsonUnmarshal(list.Body, &items))
	assert.Len(t, items, 1, "a refused campaign is not stored")
}

// segOf saves a segment in tn's organization and returns its id.
func segOf(t *testing.T, tn *tenant) string {
	t.Helper()
	res := tn.do("POST", "/api/segments", map[string]any{"name": "seg " + time.Now().Format(time.RFC3339Nano), "filter": map[string]any{"tags": []string{"x"}}})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	return res.JSON(t)["id"].(string)
}

// contacts creates tagged contacts with phones concurrently and waits until every lookup has
// answered. Their timezone is one where it is midday, so that the recipients' own quiet hours
// (their area code's zone otherwise) never hold a test's messages back.
func (tn *tenant) contacts(tag string, phones []string) {
	tn.contactsIn(tag, zoneWhere(12), phones)
}

// contactsIn is contacts with the contacts' timezone zone.
func (tn *tenant) contactsIn(tag, zone string, phones []string) {
	tn.e.t.Helper()
	tn.contactsWith(tag, map[string]any{"timezone": zone}, phones)
}

// contactsWith is contacts with the fields of fields (a timezone, a state) set on each.
func (tn *tenant) contactsWith(tag string, fields map[string]any, phones []string) {
	t := tn.e.t
	t.Helper()
	textable := func() int {
		res := tn.do("GET", "/api/contacts?tags="+tag+"&isTextable=true&includeTotal=true&limit=1", nil)
		total, _ := res.JSON(t)["total"].(float64)
		return int(total)
	}
	before := textable() // the tag's contacts made earlier, their lookups already waited for
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, p := range phones {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			body := map[string]any{"phone": p, "firstName": fmt.Sprint("Ada", i), "tags": []string{tag}}
			maps.Copy(body, fields)
			res := tn.do("POST", "/api/contacts", body)
			assert.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
		}()
	}
	wg.Wait()
	eventually(t, 60*time.Second, "phone lookups", func() bool {
		return textable() == before+len(phones)
	})
}

// A 200-contact campaign goes through the sandbox carrier to completed: merged texts in the
// recipients' threads, counters that match the sandbox's outcomes (0006 fails, 0007 is
// undelivered), and exactly the credits of the messages sent consumed, the hold released.
func TestCampaignSendsToItsAudienceAndCompletes(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550180", 1000)
	var phones []string
	for i := range 190 {
		phones = append(phones, fmt.Sprintf("+1202555%04d", 1000+i))
	}
	for i := range 5 {
		phones = append(phones, fmt.Sprintf("+120256%d0006", 1+i), fmt.Sprintf("+120257%d0007", 1+i))
	}
	tn.contacts("spring", phones)
	tn.contact("+12025559999", "Outsider", true) // not tagged: not in the audience

	created := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Spring sale", "message": "Hi {{firstName}} — spring sale!", "contactFilter": map[string]any{"tags": []string{"spring"}},
		"timezone": zoneWhere(12),
	}), http.StatusCreated)
	assert.Equal(t, "pending", created.str("status"))
	id := created.str("id")

	// Completed once every message is sent or failed; the carrier's later reports (0006 fails
	// after it took the message, delivery receipts) keep moving the counters.
	done := tn.awaitStatus(id, "completed", 90*time.Second)
	assert.EqualValues(t, 200, done.num("totalCount"))
	assert.EqualValues(t, 0, done.num("queuedCount"))
	assert.NotNil(t, done["completedAt"])
	assert.Nil(t, done["canceledAt"])
	eventually(t, 30*time.Second, "the carrier's outcomes counted", func() bool {
		done = tn.getCampaign(id)
		return done.num("failedCount") == 5 && done.num("sentCount") == 195 &&
			done.num("deliveryRate") > 97.43 && done.num("deliveryRate") < 97.44 // 190 delivered of 195 sent
	})
	metrics := done["displayMetrics"].(map[string]any)
	assert.EqualValues(t, 200, metrics["audienceSize"])
	assert.EqualValues(t, 190, metrics["delivered"])

	thread := tn.thread("+12025551007")
	require.Len(t, thread, 1)
	assert.Equal(t, "Hi Ada7 - spring sale!", thread[0]["message"], "merged and normalized")
	assert.Empty(t, tn.thread("+12025559999"), "outside the audience")

	// 195 messages went out at 1 credit each; the failed ones were refunded; the hold's rest
	// is released.
	eventually(t, 30*time.Second, "the hold settled", func() bool { return tn.balance() == 1000-195 })

	items := tn.do("GET", "/api/campaigns", nil)
	var list []map[string]any
	require.NoError(t, jsonUnmarshal(items.Body, &list))
	require.Len(t, list, 1)
	assert.EqualValues(t, 195, list[0]["sentCount"], "the list shows the same counters")
	for _, verb := range []string{"pause", "resume", "cancel"} {
		res := tn.do("POST", "/api/campaigns/"+id+"/"+verb, nil)
		assert.Equal(t, http.StatusConflict, res.Status, "%s a completed campaign: %s", verb, res.Body)
	}
}

// A campaign whose estimate the balance cannot cover fails with the reason, and nothing is
// sent or charged.
func TestCampaignWithoutEnoughCreditsFailsAndSendsNothing(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550190", 3)
	var phones []string
	for i := range 5 {
		phones = append(phones, fmt.Sprintf("+1202555%04d", 2000+i))
	}
	tn.contacts("few", phones)
	created := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Too big", "message": "Hello", "contactFilter": map[string]any{"tags": []string{"few"}}, "timezone": zoneWhere(12),
	}), http.StatusCreated)
	failed := tn.awaitStatus(created.str("id"), "failed", 30*time.Second)
	assert.Equal(t, "INSUFFICIENT_CREDITS", failed.str("failureReason"))
	assert.EqualValues(t, 0, failed.num("sentCount"))
	assert.Nil(t, failed["completedAt"])
	time.Sleep(500 * time.Millisecond)
	for _, p := range phones {
		assert.Empty(t, tn.thread(p), "nothing sent to %s", p)
	}
	assert.EqualValues(t, 3, tn.balance(), "nothing charged or held")
}

// sentSoFar counts the messages to phones that the carrier was handed (their threads).
func (tn *tenant) sentSoFar(phones []string) int {
	n := 0
	for _, p := range phones {
		for _, m := range tn.thread(p) {
			if m["status"] != "failed" {
				n++
			}
		}
	}
	return n
}

// Pause: once it answers, no further message of the campaign reaches the carrier; resume
// continues with no duplicate. Cancel: a running campaign ends completed with canceledAt, its
// unsent messages never sent and not counted as failed, and only what was sent is paid.
func TestCampaignPauseResumeCancel(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, map[string]string{"CHORUS_NUMBER_RATE": "2"}) // 2 per second: slow enough to catch
	tn := e.newTenant("+13125550200", 100)
	var phones []string
	for i := range 12 {
		phones = append(phones, fmt.Sprintf("+1202555%04d", 3000+i))
	}
	tn.contacts("pr", phones)
	body := map[string]any{"name": "P", "message": "Hi {{firstName}}", "contactFilter": map[string]any{"tags": []string{"pr"}}, "timezone": zoneWhere(12)}

	id := campaignOf(t, tn.do("POST", "/api/campaigns", body), http.StatusCreated).str("id")
	tn.awaitStatus(id, "sending", 30*time.Second)
	// 12 messages at 2 a second in a daytime zone: done within about 6 seconds from the start.
	var eta time.Time
	eventually(t, 10*time.Second, "an estimated completion", func() bool {
		s, _ := tn.getCampaign(id)["displayMetrics"].(map[string]any)["estimatedCompletionAt"].(string)
		eta, _ = time.Parse(time.RFC3339Nano, s)
		return !eta.IsZero()
	})
	assert.WithinDuration(t, time.Now().Add(3*time.Second), eta, 4*time.Second)
	p := campaignOf(t, tn.do("POST", "/api/campaigns/"+id+"/pause", nil), http.StatusOK)
	assert.Equal(t, "paused", p.str("status"))
	assert.Nil(t, p["displayMetrics"].(map[string]any)["estimatedCompletionAt"], "unknown while paused")
	atPause := tn.sentSoFar(phones)
	require.Less(t, atPause, len(phones), "paused before the end")
	res := tn.do("POST", "/api/campaigns/"+id+"/pause", nil)
	assert.Equal(t, http.StatusConflict, res.Status, "pausing twice: %s", res.Body)
	time.Sleep(2 * time.Second)
	assert.LessOrEqual(t, tn.sentSoFar(phones), atPause+1, "nothing more handed to the carrier (one may have been in flight)")
	assert.Equal(t, "paused", tn.getCampaign(id).str("status"))

	r := campaignOf(t, tn.do("POST", "/api/campaigns/"+id+"/resume", nil), http.StatusOK)
	assert.Equal(t, "sending", r.str("status"), "back where it was")
	done := tn.awaitStatus(id, "completed", 60*time.Second)
	assert.Equal(t, done["completedAt"], done["displayMetrics"].(map[string]any)["estimatedCompletionAt"], "completed: its completion")
	for _, ph := range phones {
		assert.Len(t, tn.thread(ph), 1, "exactly one message to %s", ph)
	}
	eventually(t, 30*time.Second, "the hold settled", func() bool { return tn.balance() == 100-12 })

	// Cancel while sending.
	body["message"] = "Second {{firstName}}"
	id = campaignOf(t, tn.do("POST", "/api/campaigns", body), http.StatusCreated).str("id")
	tn.awaitStatus(id, "sending", 30*time.Second)
	x := campaignOf(t, tn.do("POST", "/api/campaigns/"+id+"/cancel", nil), http.StatusOK)
	assert.Equal(t, "completed", x.str("status"))
	assert.NotNil(t, x["canceledAt"])
	assert.NotNil(t, x["completedAt"])
	res = tn.do("POST", "/api/campaigns/"+id+"/resume", nil)
	assert.Equal(t, http.StatusConflict, res.Status, "%s", res.Body)
	time.Sleep(2 * time.Second)
	second := func() int {
		n := 0
		for _, p := range phones {
			for _, m := range tn.thread(p) {
				// A withdrawn message shows in the thread as failed; count what the carrier took.
				if strings.HasPrefix(m["message"].(string), "Second") && m["status"] != "failed" {
					n++
				}
			}
		}
		return n
	}
	sent := second()
	require.Less(t, sent, len(phones), "canceled before the end")
	time.Sleep(2 * time.Second)
	assert.Equal(t, sent, second(), "nothing more sent after the cancel")
	c := tn.getCampaign(id)
	assert.Equal(t, "completed", c.str("status"), "the fan-out does not revive it")
	assert.EqualValues(t, 0, c.num("failedCount"), "withdrawn messages are not failures")
	assert.EqualValues(t, sent, c.num("sentCount"))
	eventually(t, 30*time.Second, "only what was sent is paid", func() bool { return tn.balance() == float64(100-12-sent) })
}

// A scheduled campaign starts by itself at scheduledFor (in a sandbox organization: nothing
// is charged) and goes out like an immediate one.
func TestScheduledCampaignStartsOnTime(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	c := e.newMemberWithNumber("write", "+13125550210")
	tn := &tenant{client: c}
	phones := []string{"+12025554001", "+12025554002", "+12025554003"}
	tn.contacts("sched", phones)
	at := time.Now().Add(3 * time.Second).UTC()
	s := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Later", "message": "Later {{firstName}}", "contactFilter": map[string]any{"tags": []string{"sched"}},
		"scheduledFor": at.Format(time.RFC3339Nano), "timezone": zoneWhere(12),
	}), http.StatusCreated)
	assert.Equal(t, "scheduled", s.str("status"))
	assert.Empty(t, tn.thread(phones[0]), "nothing before its time")
	done := tn.awaitStatus(s.str("id"), "completed", 60*time.Second)
	assert.EqualValues(t, 3, done.num("sentCount"))
	for _, p := range phones {
		th := tn.thread(p)
		require.Len(t, th, 1)
		ts, err := time.Parse(time.RFC3339Nano, th[0]["timestamp"].(string))
		require.NoError(t, err)
		assert.False(t, ts.Before(at), "sent at or after scheduledFor")
	}

	// Replies attributed to the campaign count, opt-outs excluded.
	require.Equal(t, http.StatusOK, e.inbound("+13125550210", phones[0], "Sounds good!").Status)
	require.Equal(t, http.StatusOK, e.inbound("+13125550210", phones[1], "STOP").Status)
	require.Equal(t, http.StatusOK, e.inbound("+13125550210", phones[2], "What time?").Status)
	eventually(t, 15*time.Second, "replies counted", func() bool {
		return tn.getCampaign(s.str("id")).num("replyCountExcludingOptouts") == 2
	})
	time.Sleep(500 * time.Millisecond)
	assert.EqualValues(t, 2, tn.getCampaign(s.str("id")).num("replyCountExcludingOptouts"), "the STOP is not a reply")
}

// A contact deleted while its campaign is sending: its queued message is withdrawn (never
// handed to the carrier, counted neither sent nor failed, nothing charged) and the campaign
// still completes.
func TestCampaignCompletesWhenARecipientIsDeletedMidSend(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, map[string]string{"CHORUS_NUMBER_RATE": "2"}) // slow enough to delete in time
	tn := e.newTenant("+13125550210", 100)
	var phones []string
	for i := range 8 {
		phones = append(phones, fmt.Sprintf("+1202555%04d", 4000+i))
	}
	tn.contacts("gone", phones)
	id := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "D", "message": "Hi {{firstName}}", "contactFilter": map[string]any{"tags": []string{"gone"}}, "timezone": zoneWhere(12),
	}), http.StatusCreated).str("id")
	tn.awaitStatus(id, "sending", 30*time.Second)

	// Delete two recipients the carrier has not been handed yet.
	res := tn.do("GET", "/api/contacts?tags=gone&limit=100", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	deleted := map[string]bool{}
	for _, c := range res.JSON(t)["contacts"].([]any) {
		c := c.(map[string]any)
		ph := c["phone"].(string)
		if len(deleted) == 2 || len(tn.thread(ph)) > 0 {
			continue
		}
		del := tn.do("DELETE", "/api/contacts/"+c["id"].(string), nil)
		require.Equal(t, http.StatusOK, del.Status, "%s", del.Body)
		deleted[ph] = true
	}
	require.Len(t, deleted, 2, "two recipients still waiting")

	done := tn.awaitStatus(id, "completed", 60*time.Second)
	assert.EqualValues(t, 8, done.num("totalCount"))
	assert.EqualValues(t, 0, done.num("queuedCount"))
	assert.EqualValues(t, 0, done.num("failedCount"), "a deleted recipient is no failure")
	// A message may have left the queue between the thread check and the deletion: it then
	// went out (and its thread went with its contact, so only the counter shows it). Every
	// other deleted recipient's message was withdrawn, and only what was sent is paid.
	sent := 0
	eventually(t, 30*time.Second, "the others sent and only they paid", func() bool {
		sent = int(tn.getCampaign(id).num("sentCount"))
		return (sent == 6 || sent == 7) && tn.balance() == float64(100-sent)
	})
}

// Test-send: sent at once to any E.164 number (even at night in the campaign's zone), the
// preview data merged, free, counted in no metric; an opted-out number is refused while the
// others go; bad recipients and another organization's number or campaign are refused.
func TestCampaignTestSend(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550220", 100)
	other := e.newTenant("+13125550221", 100)
	const stranger, stopped = "+12025556001", "+12025556002"
	tn.contact(stopped, "Bo", true)
	e.text(tn.number, stopped, "STOP")

	id := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{
		"name": "T", "message": "Hi {{firstName}} of {{team}}{{missing}}!", "timezone": zoneWhere(3), // 03:00 there
	}), http.StatusCreated).str("id")
	res := tn.do("POST", "/api/campaigns/"+id+"/test-send", map[string]any{
		"recipients": []string{stranger, stopped}, "mergePreviewData": map[string]any{"firstName": "Ada", "team": "math"},
	})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	results := res.JSON(t)["results"].([]any)
	require.Len(t, results, 2)
	sent, refused := results[0].(map[string]any), results[1].(map[string]any)
	assert.Equal(t, map[string]any{"to": stranger, "status": "sent", "reason": "", "messageId": sent["messageId"]}, sent)
	assert.NotEmpty(t, sent["messageId"])
	assert.Equal(t, map[string]any{"to": stopped, "status": "refused", "reason": "CONTACT_OPTED_OUT", "messageId": ""}, refused)

	eventually(t, 15*time.Second, "the test copy delivered", func() bool {
		th := tn.thread(stranger)
		return len(th) == 1 && th[0]["message"] == "Hi Ada of math!" && th[0]["status"] == "delivered"
	})
	for _, m := range tn.thread(stopped) {
		assert.NotContains(t, m["message"], "Hi Ada", "nothing to the opted-out number")
	}
	// A body of its own, merged the same way.
	res = tn.do("POST", "/api/campaigns/"+id+"/test-send", map[string]any{"recipients": []string{stranger}, "body": "Yo {{firstName}}!"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	eventually(t, 15*time.Second, "the second copy", func() bool {
		th := tn.thread(stranger)
		return len(th) == 2 && th[0]["message"] == "Yo !"
	})
	assert.EqualValues(t, 100, tn.balance(), "test sends cost nothing")
	c := tn.getCampaign(id)
	assert.Equal(t, "draft", c.str("status"))
	for _, k := range []string{"totalCount", "sentCount", "failedCount", "queuedCount"} {
		assert.EqualValues(t, 0, c.num(k), k)
	}

	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{}, "recipients"},
		{map[string]any{"recipients": []string{"+12025556001", "+12025556002", "+12025556003", "+12025556004", "+12025556005", "+12025556006",
			"+12025556007", "+12025556008", "+12025556009", "+12025556010", "+12025556011"}}, "recipients"},
		{map[string]any{"recipients": []string{"555-6001"}}, "recipients[0]"},
		{map[string]any{"recipients": []string{stranger}, "mediaUrls": []string{"http://localhost/x.png"}}, "mediaUrls[0]"},
		{map[string]any{"recipients": []string{stranger}, "fromPhoneNumberId": other.numberID}, "fromPhoneNumberId"},
		{map[string]any{"recipients": []string{stranger}, "fromPhoneNumberId": "nope"}, "fromPhoneNumberId"},
	} {
		res := tn.do("POST", "/api/campaigns/"+id+"/test-send", bad.body)
		require.Equal(t, http.StatusBadRequest, res.Status, "%v: %s", bad.body, res.Body)
		assert.Contains(t, res.ErrFields(t), bad.field, "%v", bad.body)
	}
	res = other.do("POST", "/api/campaigns/"+id+"/test-send", map[string]any{"recipients": []string{stranger}})
	assert.Equal(t, http.StatusNotFound, res.Status, "another organization's campaign: %s", res.Body)
	assert.Len(t, tn.thread(stranger), 2, "no refused call sent anything")
}

// Recipient-zone quiet hours: a recipient whose own zone is at night waits in the queue while
// the others, in daytime zones, are sent; the campaign keeps sending meanwhile.
func TestCampaignRecipientInANightZoneWaits(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550230", 100)
	day := []string{"+12025555001", "+12025555002", "+12025555003"}
	const night = "+12025555009"
	tn.contacts("tz", day)
	tn.contactsIn("tzn", zoneWhere(3), []string{night})
	id := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Z", "message": "Hi {{firstName}}", "contactFilter": map[string]any{"tags": []string{"tz", "tzn"}}, "timezone": zoneWhere(12),
	}), http.StatusCreated).str("id")
	eventually(t, 30*time.Second, "the daytime recipients sent", func() bool { return tn.getCampaign(id).num("sentCount") == 3 })
	time.Sleep(2 * time.Second)
	c := tn.getCampaign(id)
	assert.Equal(t, "sending", c.str("status"), "not complete while one waits")
	assert.EqualValues(t, 3, c.num("sentCount"))
	assert.EqualValues(t, 1, c.num("queuedCount"))
	assert.Empty(t, tn.thread(night), "nothing handed over at 03:00 in the recipient's zone")
	for _, p := range day {
		assert.Len(t, tn.thread(p), 1, p)
	}
}
