package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/redistest"
)

// Poll rules of the spec and of issue 25 (item 7 and "Rules no test checks") over REST.

// awaitAsked is awaitOutgoing that also waits for the newest outgoing message to be delivered
// (or finally undelivered or failed): its carrier status is recorded, so a reply sent now comes
// after it, and polls reads the reply as the answer to the question the message asked.
func (tn *tenant) awaitAsked(phone string, n int) []string {
	t := tn.e.t
	t.Helper()
	var out []string
	eventually(t, 30*time.Second, fmt.Sprintf("%d outgoing messages to %s, the last delivered", n, phone), func() bool {
		var ok bool
		out, ok = tn.asked(phone, n)
		return ok
	})
	return out
}

// asked answers the texts of the outgoing messages of tn's thread with phone, oldest first,
// and whether there are at least n of them with the newest past "sent".
func (tn *tenant) asked(phone string, n int) ([]string, bool) {
	thread := tn.thread(phone)
	var out []string
	newest := ""
	for i := len(thread) - 1; i >= 0; i-- {
		if thread[i]["direction"] == "outgoing" {
			out = append(out, thread[i]["message"].(string))
			newest, _ = thread[i]["status"].(string)
		}
	}
	return out, len(out) >= n && newest != "" && newest != "sent"
}

// participant is phone's row of poll id's participants.
func (tn *tenant) participant(id, phone string) map[string]any {
	tn.e.t.Helper()
	_, ps := tn.participants(id, "")
	require.Contains(tn.e.t, ps, phone)
	return ps[phone]
}

// reply texts body from phone to tn's number and waits until polls has handled it: messaging's
// stream holds the reply's message.received event and the polls group has read and
// acknowledged everything up to it (acknowledged once its transaction committed). Whatever
// polls does with the reply is done then, an answer or nothing: a test can assert that a reply
// changed nothing without waiting a while.
func (e *msgEnv) reply(rdb *redis.Client, tn *tenant, phone, body string) {
	t := e.t
	t.Helper()
	e.text(tn.number, phone, body)
	id := e.lastIncomingID(tn, phone)
	ctx := context.Background()
	stream := outbox.StreamName("messaging")
	eventually(t, 30*time.Second, "polls handled the reply "+body, func() bool {
		entry := ""
		for _, ev := range streamEvents(t, rdb, "messaging", "message.received", tn.org) {
			if strings.Contains(string(ev.Payload), id) {
				entry = ev.EntryID
			}
		}
		if entry == "" {
			return false // not published yet
		}
		groups, err := rdb.XInfoGroups(ctx, stream).Result()
		require.NoError(t, err)
		for _, g := range groups {
			if g.Name == "polls" {
				return g.Pending == 0 && !streamIDBefore(g.LastDeliveredID, entry)
			}
		}
		return false
	})
}

// streamIDBefore reports whether stream entry id a ("<ms>-<seq>") comes before b.
func streamIDBefore(a, b string) bool {
	parse := func(id string) (ms, seq uint64) {
		l, r, _ := strings.Cut(id, "-")
		ms, _ = strconv.ParseUint(l, 10, 64)
		seq, _ = strconv.ParseUint(r, 10, 64)
		return ms, seq
	}
	am, as := parse(a)
	bm, bs := parse(b)
	return am < bm || (am == bm && as < bs)
}

// askedPoll starts body's poll from number to one contact with phone, on a stack whose Redis
// the test reads (for e.reply), and waits until the poll's first question reached the contact.
func askedPoll(t *testing.T, number, phone string, body map[string]any) (*msgEnv, *redis.Client, *tenant, string) {
	t.Helper()
	redisURL, rdb := redistest.New(t)
	e := newMsgEnv(t, map[string]string{"CHORUS_REDIS_URL": redisURL})
	tn := e.newTenant(number, 50)
	tn.contacts("asked", []string{phone})
	id := tn.createPoll(body)["id"].(string)
	tn.startPoll(id, "asked")
	tn.awaitAsked(phone, 1)
	return e, rdb, tn, id
}

// incoming are the texts of the inbound messages of tn's thread with phone, oldest first.
func (tn *tenant) incoming(phone string) []string {
	var out []string
	thread := tn.thread(phone)
	for i := len(thread) - 1; i >= 0; i-- {
		if thread[i]["direction"] == "incoming" {
			out = append(out, thread[i]["message"].(string))
		}
	}
	return out
}

// Issue 25 item 7: a reply answers only the question last delivered to the participant. A
// contact at night in her own zone has question 1 queued for the morning: her replies answer
// nothing (she is not completed with answers to questions she never got), and stay in the
// conversation as ordinary inbound messages.
func TestPollReplyBeforeItsQuestionLeftIsNoAnswer(t *testing.T) {
	t.Parallel()
	redisURL, rdb := redistest.New(t)
	e := newMsgEnv(t, map[string]string{"CHORUS_REDIS_URL": redisURL})
	tn := e.newTenant("+13125550301", 50)
	const owl = "+12025556301"
	tn.contactsIn("early", zoneWhere(3), []string{owl})
	id := tn.createPoll(pollBody("Early"))["id"].(string)
	tn.startPoll(id, "early")
	tn.awaitMessagesCounted(1) // question 1 handed to messaging, held there for the morning

	for _, text := range []string{"A", "It is warm", "S"} {
		e.reply(rdb, tn, owl, text)
		p := tn.participant(id, owl)
		assert.Equal(t, "in_progress", p["status"], "after %q", text)
		assert.EqualValues(t, 0, p["responseCount"], "after %q", text)
		assert.Empty(t, p["responses"], "%q answers no question never delivered", text)
		assert.EqualValues(t, 1, p["currentQuestionNumber"], "after %q", text)
	}
	assert.Equal(t, []string{"A", "It is warm", "S"}, tn.incoming(owl), "the replies stay in the conversation")
	assert.Empty(t, tn.outgoing(owl), "no question went out")
	assert.EqualValues(t, 1, tn.messageTotals()["total"], "nor was a later question queued")
}

// Follow-up questions wait for 08:00-21:00 in the poll's zone: question 1 was delivered in the
// day; the poll, paused, gets a zone where it is night, and its answer's question 2 is held
// at the resume. A reply while question 2 waits answers nothing: it is no answer to question
// 2 (never delivered), nor a second answer to question 1.
func TestPollFollowUpQuestionWaitsForQuietHours(t *testing.T) {
	t.Parallel()
	const ada = "+12025556302"
	body := pollBody("Follow-up")
	e, rdb, tn, id := askedPoll(t, "+13125550302", ada, body)

	res := tn.do("POST", "/api/polls/"+id+"/pause", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	body["timezone"] = zoneWhere(3)
	res = tn.do("PUT", "/api/polls/"+id, body)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	e.text(tn.number, ada, "A")
	eventually(t, 30*time.Second, "ada's answer recorded", func() bool {
		return tn.participant(id, ada)["responseCount"] == float64(1)
	})
	res = tn.do("POST", "/api/polls/"+id+"/resume", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	tn.awaitMessagesCounted(2) // question 2 handed to messaging
	assert.Equal(t, []string{pollIntroFor("Ada0")}, tn.outgoing(ada), "question 2 waits for the morning")

	e.reply(rdb, tn, ada, "Because")
	p := tn.participant(id, ada)
	assert.Equal(t, "in_progress", p["status"])
	assert.Equal(t, []string{"color=A"}, answers(p), "the reply to a question still queued answers nothing")
	assert.EqualValues(t, 2, p["currentQuestionNumber"])
	assert.Equal(t, []string{"A", "Because"}, tn.incoming(ada), "the reply stays in the conversation")
	assert.Equal(t, []string{pollIntroFor("Ada0")}, tn.outgoing(ada))
}

// pollIntroFor is the first message of pollBody's poll to a contact named first.
func pollIntroFor(first string) string {
	return "Hi " + first + "! Three quick questions.\n\n" + pollQ1
}

// A poll without a timezone respects quiet hours in its organization's: at night there, its
// question 1 waits; in an organization in the day, it leaves. The recipients are in the day.
func TestPollQuietHoursFallBackToTheOrganizationZone(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	night := e.newTenantIn(zoneWhere(3), "+13125550303", 50)
	day := e.newTenantIn(zoneWhere(12), "+13125550304", 50)
	const owl, lark = "+12025556303", "+12025556304"
	night.contacts("zone", []string{owl})
	day.contacts("zone", []string{lark})
	for _, tn := range []*tenant{night, day} {
		body := pollBody("Org zone")
		delete(body, "timezone")
		id := tn.createPoll(body)["id"].(string)
		assert.Nil(t, tn.getPoll(id)["timezone"])
		tn.startPoll(id, "zone")
	}
	assert.Equal(t, []string{pollIntroFor("Ada0")}, day.awaitOutgoing(lark, 1), "the day organization's poll sent")
	night.awaitMessagesCounted(1)
	assert.Empty(t, night.thread(owl), "the night organization's poll holds its question")
}

// POST /api/polls/:id/start: scheduledFor within 30 seconds of now, or in the past, starts
// the poll now (202, active, its questions sent); more than 30 seconds ahead schedules it
// (200, scheduled).
func TestPollStartBoundary(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550305", 50)
	const ada = "+12025556305"
	tn.contacts("soon", []string{ada})
	start := func(ahead time.Duration) response {
		t.Helper()
		id := tn.createPoll(pollBody("Boundary " + ahead.String()))["id"].(string)
		at := time.Now().Add(ahead).UTC().Format(time.RFC3339)
		return tn.do("POST", "/api/polls/"+id+"/start", map[string]any{"contactFilter": map[string]any{"tags": []string{"soon"}}, "scheduledFor": at})
	}

	res := start(31 * time.Second)
	require.Equal(t, http.StatusOK, res.Status, "31 s ahead: %s", res.Body)
	assert.Equal(t, "scheduled", res.JSON(t)["status"])

	res = start(29 * time.Second)
	require.Equal(t, http.StatusAccepted, res.Status, "29 s ahead: %s", res.Body)
	assert.Equal(t, "active", res.JSON(t)["status"])
	assert.NotEmpty(t, res.JSON(t)["message"])
	assert.Equal(t, pollIntroFor("Ada0"), tn.awaitOutgoing(ada, 1)[0], "started now")

	// In the past: now too. Ada is in the 29-second poll: she waits for it to end for her.
	res = start(-time.Hour)
	require.Equal(t, http.StatusAccepted, res.Status, "an hour ago: %s", res.Body)
	got := res.JSON(t)
	assert.Equal(t, "active", got["status"])
	assert.Equal(t, "active", tn.getPoll(got["id"].(string))["status"])
}

// GET /api/polls/:id/participants: 100 participants without limit; status=not_started lists
// those waiting (in another poll meanwhile); search finds a last name.
func TestPollParticipantsDefaultsAndFilters(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550306", 1000)
	phones := make([]string, 101)
	for i := range phones {
		phones[i] = fmt.Sprintf("+1202555%04d", 7100+i)
	}
	tn.contactsIn("many", zoneWhere(3), phones) // at night: nothing is sent, nothing to wait for
	const lovelace = "+12025557300"
	res := tn.do("POST", "/api/contacts", map[string]any{"phone": lovelace, "firstName": "Ada", "lastName": "Lovelace",
		"tags": []string{"many"}, "timezone": zoneWhere(3)})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	eventually(t, 30*time.Second, "lovelace's lookup", func() bool {
		res := tn.do("GET", "/api/contacts?tags=many&isTextable=true&includeTotal=true&limit=1", nil)
		return res.JSON(t)["total"] == float64(102)
	})

	body := pollBody("Many")
	delete(body, "introMediaUrl")
	first := tn.createPoll(body)["id"].(string)
	tn.startPoll(first, "many")
	eventually(t, 60*time.Second, "102 participants in progress", func() bool {
		_, ps := tn.participants(first, "?status=in_progress&limit=500")
		return len(ps) == 102
	})
	_, ps := tn.participants(first, "")
	assert.Len(t, ps, 100, "limit defaults to 100")
	_, ps = tn.participants(first, "?search=lovelace")
	assert.Equal(t, []string{lovelace}, keys(ps), "search on the last name")
	_, ps = tn.participants(first, "?status=not_started")
	assert.Empty(t, ps)

	second := tn.createPoll(pollBody("Second"))["id"].(string)
	tn.startPoll(second, "many")
	eventually(t, 60*time.Second, "the second poll's participants waiting", func() bool {
		_, ps := tn.participants(second, "?status=not_started&limit=500")
		return len(ps) == 102
	})
	_, ps = tn.participants(second, "?status=not_started")
	assert.Len(t, ps, 100, "status filter with the default limit")
	_, ps = tn.participants(second, "?status=not_started&search=Lovelace")
	assert.Equal(t, []string{lovelace}, keys(ps))
	assert.Equal(t, "not_started", ps[lovelace]["status"])
	_, ps = tn.participants(second, "?status=in_progress")
	assert.Empty(t, ps, "each contact is in one poll at a time")
}
