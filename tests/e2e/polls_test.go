package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/sandbox"
)

// The texts of the test poll: q1 (multiple choice, B jumps to q3), q2 (open ended), q3
// (multiple choice).
const (
	pollIntro = "Hi {{firstName}}! Three quick questions."
	pollQ1    = "Q1: Favourite colour? A) Red B) Blue"
	pollQ2    = "Q2: Why red?"
	pollQ3    = "Q3: Size? S or L"
	pollOutro = "Thanks for answering!"
	pollMedia = "https://example.com/poll.png"
)

func pollBody(name string) map[string]any {
	return map[string]any{
		"name": name, "introductoryText": pollIntro, "introMediaUrl": pollMedia, "outroText": pollOutro,
		"timezone": zoneWhere(12),
		"questions": []map[string]any{
			{"questionNumber": 1, "text": pollQ1, "type": "multiple_choice", "responseCode": "color",
				"options":        []map[string]any{{"code": "A", "label": "Red"}, {"code": "B", "label": "Blue"}},
				"branchingLogic": map[string]any{"condition": "B", "nextQuestion": 3}},
			{"questionNumber": 2, "text": pollQ2, "type": "open_ended", "responseCode": "why"},
			{"questionNumber": 3, "text": pollQ3, "type": "multiple_choice", "responseCode": "size",
				"options": []map[string]any{{"code": "S", "label": "Small"}, {"code": "L", "label": "Large"}}},
		},
	}
}

// createPoll creates body's poll and returns it.
func (tn *tenant) createPoll(body map[string]any) map[string]any {
	t := tn.e.t
	t.Helper()
	res := tn.do("POST", "/api/polls", body)
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	p := res.JSON(t)
	require.Equal(t, "draft", p["status"])
	return p
}

// startPoll starts poll id at once for the contacts tagged tag.
func (tn *tenant) startPoll(id, tag string) {
	t := tn.e.t
	t.Helper()
	res := tn.do("POST", "/api/polls/"+id+"/start", map[string]any{"contactFilter": map[string]any{"tags": []string{tag}}})
	require.Equal(t, http.StatusAccepted, res.Status, "%s", res.Body)
	got := res.JSON(t)
	assert.Equal(t, id, got["id"])
	assert.Equal(t, "active", got["status"])
	assert.NotEmpty(t, got["message"])
}

func (tn *tenant) getPoll(id string) map[string]any {
	t := tn.e.t
	t.Helper()
	res := tn.do("GET", "/api/polls/"+id, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	return res.JSON(t)
}

func (tn *tenant) awaitPollStatus(id, want string) map[string]any {
	var p map[string]any
	eventually(tn.e.t, 30*time.Second, "poll "+want, func() bool {
		p = tn.getPoll(id)
		return p["status"] == want
	})
	return p
}

// participants lists poll id's participants with query, by phone.
func (tn *tenant) participants(id, query string) (map[string]any, map[string]map[string]any) {
	t := tn.e.t
	t.Helper()
	res := tn.do("GET", "/api/polls/"+id+"/participants"+query, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	body := res.JSON(t)
	out := map[string]map[string]any{}
	for _, p := range body["participants"].([]any) {
		m := p.(map[string]any)
		out[m["phone"].(string)] = m
	}
	return body["poll"].(map[string]any), out
}

// answers are a participant's stored responses as responseCode=answer, in order.
func answers(p map[string]any) []string {
	var out []string
	for _, r := range p["responses"].([]any) {
		m := r.(map[string]any)
		out = append(out, fmt.Sprintf("%s=%s", m["responseCode"], m["answer"]))
	}
	return out
}

// stays waits a moment and checks no more than n messages went to phone.
func (tn *tenant) stays(phone string, n int) {
	tn.e.t.Helper()
	time.Sleep(700 * time.Millisecond)
	assert.Len(tn.e.t, tn.outgoing(phone), n, "nothing more is sent to %s", phone)
}

// A poll over the sandbox, to completion: the intro (MMS, merge fields) and question 1; an
// invalid answer re-asked once with the valid codes, a second invalid answer leaving the
// participant on the question; a code answered case-insensitively, an open-ended answer;
// branching (B skips question 2); the outro; responses stored under their codes; a
// carrier redelivering the same inbound (same MessageSid) and a replayed event advance nobody
// twice; the poll completes once everyone has, and the hold's rest is released (credits spent
// are the messages sent).
func TestPollToCompletion(t *testing.T) {
	t.Parallel()
	redisURL, rdb := redistest.New(t)
	e := newMsgEnv(t, map[string]string{"CHORUS_REDIS_URL": redisURL})
	tn := e.newTenant("+13125550180", 100)
	ada, bob := "+12025554001", "+12025554002"
	tn.contacts("survey", []string{ada, bob})
	p := tn.createPoll(pollBody("Colours"))
	id := p["id"].(string)
	tn.startPoll(id, "survey")

	intro := tn.awaitAsked(ada, 1)
	assert.Equal(t, "Hi Ada0! Three quick questions.\n\n"+pollQ1, intro[0], "intro and question 1 in one message")
	thread := tn.thread(ada)
	assert.Equal(t, pollMedia, thread[len(thread)-1]["mediaUrl"], "the intro is an MMS")
	_, ps := tn.participants(id, "")
	require.Len(t, ps, 2)
	assert.Equal(t, "in_progress", ps[ada]["status"])
	assert.EqualValues(t, 1, ps[ada]["currentQuestionNumber"])

	e.text(tn.number, ada, "green")
	assert.Equal(t, "Please reply A or B. "+pollQ1, tn.awaitAsked(ada, 2)[1])
	e.text(tn.number, ada, "purple")
	tn.stays(ada, 2)
	e.text(tn.number, ada, " a ")
	assert.Equal(t, pollQ2, tn.awaitAsked(ada, 3)[2])

	// The carrier sends the open-ended answer twice under one MessageSid, and its event is
	// replayed: one answer, one next question.
	form, err := sandbox.Text{To: tn.number, From: ada, Body: "It is warm"}.Form()
	require.NoError(t, err)
	form.Set("MessageSid", newSID())
	for range 2 {
		res := e.postInbound(url.Values(form))
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	}
	assert.Equal(t, pollQ3, tn.awaitAsked(ada, 4)[3])
	replay(t, rdb, tn.org, e.lastIncomingID(tn, ada))
	tn.stays(ada, 4)
	e.text(tn.number, ada, "s")
	assert.Equal(t, pollOutro, tn.awaitAsked(ada, 5)[4])

	tn.awaitAsked(bob, 1)
	e.text(tn.number, bob, "B")
	assert.Equal(t, pollQ3, tn.awaitAsked(bob, 2)[1], "B skips question 2")
	e.text(tn.number, bob, "L")
	assert.Equal(t, pollOutro, tn.awaitAsked(bob, 3)[2])

	done := tn.awaitPollStatus(id, "completed")
	assert.EqualValues(t, 2, done["completedCount"])
	assert.NotNil(t, done["completedAt"])
	summary, ps := tn.participants(id, "")
	assert.Equal(t, map[string]any{"id": id, "name": "Colours", "status": "completed", "questionCount": float64(3)}, summary)
	assert.Equal(t, []string{"color=a", "why=It is warm", "size=s"}, answers(ps[ada]))
	assert.Equal(t, []string{"color=B", "size=L"}, answers(ps[bob]))
	assert.Equal(t, "A", ps[ada]["responses"].([]any)[0].(map[string]any)["optionCode"])
	for _, who := range []string{ada, bob} {
		assert.Equal(t, "completed", ps[who]["status"])
		assert.NotNil(t, ps[who]["completedAt"])
		assert.NotNil(t, ps[who]["lastResponseAt"])
	}
	assert.EqualValues(t, 3, ps[ada]["responseCount"])
	// Ada: the intro with q1 (MMS) 2 + re-ask, q2, q3, outro 1 each; Bob: 2 + q3, outro.
	eventually(t, 30*time.Second, "10 credits spent, the hold released", func() bool { return tn.balance() == 90 })
}

// Pause, update, resume; STOP mid-poll; close; the participants list's filters.
func TestPollPauseUpdateResumeStopClose(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550181", 100)
	ada, bob, cy, dee := "+12025554011", "+12025554012", "+12025554013", "+12025554014"
	tn.contacts("pause", []string{ada, bob, cy, dee})
	p := tn.createPoll(pollBody("Pausing"))
	id := p["id"].(string)
	tn.startPoll(id, "pause")
	for _, who := range []string{ada, bob, cy, dee} {
		tn.awaitAsked(who, 1)
	}

	// Cy says STOP: terminated at once, nothing more sent but the opt-out's confirmation.
	e.text(tn.number, cy, "STOP")
	eventually(t, 30*time.Second, "cy terminated", func() bool {
		_, ps := tn.participants(id, "?status=terminated")
		return ps[cy] != nil
	})

	res := tn.do("PUT", "/api/polls/"+id, pollBody("Renamed"))
	assert.Equal(t, http.StatusConflict, res.Status, "an active poll cannot be updated: %s", res.Body)
	assert.Equal(t, "INVALID_STATE", res.ErrCode(t))
	res = tn.do("POST", "/api/polls/"+id+"/pause", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, "paused", res.JSON(t)["status"])
	assert.Equal(t, http.StatusConflict, tn.do("POST", "/api/polls/"+id+"/pause", nil).Status)

	// Answers while paused are recorded; no question leaves.
	e.text(tn.number, ada, "A")
	eventually(t, 30*time.Second, "ada's answer recorded", func() bool {
		_, ps := tn.participants(id, "")
		return ps[ada]["responseCount"] == float64(1)
	})
	tn.stays(ada, 1)

	// The update changes question 2's text; Ada gets the new one at the resume.
	body := pollBody("Renamed")
	body["questions"].([]map[string]any)[1]["text"] = "Q2: Why red, really?"
	res = tn.do("PUT", "/api/polls/"+id, body)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, "Renamed", res.JSON(t)["name"])
	res = tn.do("POST", "/api/polls/"+id+"/resume", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, "active", res.JSON(t)["status"])
	assert.Equal(t, "Q2: Why red, really?", tn.awaitAsked(ada, 2)[1])

	e.text(tn.number, bob, "B")
	tn.awaitAsked(bob, 2)
	e.text(tn.number, bob, "S")
	tn.awaitAsked(bob, 3)

	// The list's filters: status, search on first name, last name and phone, limit.
	_, ps := tn.participants(id, "?status=completed")
	assert.Equal(t, []string{bob}, keys(ps))
	_, ps = tn.participants(id, "?status=in_progress")
	assert.Equal(t, []string{ada, dee}, keys(ps))
	_, ps = tn.participants(id, "?status=terminated")
	assert.Equal(t, []string{cy}, keys(ps))
	assert.Equal(t, "opted_out", ps[cy]["terminationReason"])
	_, ps = tn.participants(id, "?search=ada3") // Dee is the fourth contact: Ada3
	assert.Equal(t, []string{dee}, keys(ps))
	_, ps = tn.participants(id, "?search=4012")
	assert.Equal(t, []string{bob}, keys(ps))
	_, ps = tn.participants(id, "?limit=1")
	assert.Len(t, ps, 1)
	res = tn.do("GET", "/api/polls/"+id+"/participants?limit=501", nil)
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.ErrFields(t), "limit")
	res = tn.do("GET", "/api/polls/"+id+"/participants?status=done", nil)
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.ErrFields(t), "status")

	// Close: in-progress participants terminated, nothing more sent, no more moves.
	res = tn.do("POST", "/api/polls/"+id+"/close", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, "completed", res.JSON(t)["status"])
	_, ps = tn.participants(id, "?status=terminated")
	assert.Equal(t, []string{ada, cy, dee}, keys(ps))
	assert.Equal(t, "poll_closed", ps[dee]["terminationReason"])
	e.text(tn.number, dee, "A")
	tn.stays(dee, 1)
	assert.Len(t, tn.outgoing(cy), 1+1, "the poll's intro, then the STOP confirmation only")
	for _, move := range []string{"pause", "resume", "close", "start"} {
		res := tn.do("POST", "/api/polls/"+id+"/"+move, map[string]any{"contactFilter": map[string]any{"tags": []string{"pause"}}})
		assert.Equal(t, http.StatusConflict, res.Status, "%s: %s", move, res.Body)
		assert.Equal(t, "INVALID_STATE", res.ErrCode(t))
	}

	// Deleting a contact removes its participation and responses.
	_, ps = tn.participants(id, "")
	res = tn.do("DELETE", "/api/contacts/"+ps[ada]["contactId"].(string), nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	eventually(t, 30*time.Second, "ada's participation removed", func() bool {
		_, ps := tn.participants(id, "")
		return ps[ada] == nil && len(ps) == 3
	})
}

func keys(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// completionTarget closes the poll when reached (the others terminated); a contact in two
// polls is in one at a time: the later waits not_started, its replies go to the earlier, and
// it begins once the earlier ends for it; a scheduled start fires by itself.
func TestPollTargetTwoPollsSchedule(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550182", 200)
	ada, bob, cy := "+12025554021", "+12025554022", "+12025554023"
	tn.contacts("target", []string{ada, bob, cy})

	first := pollBody("First")
	first["completionTargetEnabled"], first["completionTarget"] = true, 1
	first["introMediaUrl"] = ""
	one := tn.createPoll(first)["id"].(string)
	tn.startPoll(one, "target")
	for _, who := range []string{ada, bob, cy} {
		tn.awaitAsked(who, 1)
	}

	// A second poll to the same contacts: they wait while in the first.
	second := map[string]any{"name": "Second", "timezone": zoneWhere(12), "questions": []map[string]any{
		{"questionNumber": 1, "text": "Second poll: rate us 1-5", "type": "open_ended", "responseCode": "rating"},
	}}
	two := tn.createPoll(second)["id"].(string)
	tn.startPoll(two, "target")
	eventually(t, 30*time.Second, "the second poll's audience stored", func() bool {
		_, ps := tn.participants(two, "?status=not_started")
		return len(ps) == 3
	})

	// Bob's answers go to the first poll; completing it reaches the target: the first poll
	// closes, Ada and Cy are terminated there, and all three begin the second.
	e.text(tn.number, bob, "B")
	tn.awaitAsked(bob, 2)
	e.text(tn.number, bob, "S")
	tn.awaitPollStatus(one, "completed")
	_, ps := tn.participants(one, "")
	assert.Equal(t, "completed", ps[bob]["status"])
	assert.Equal(t, "terminated", ps[ada]["status"])
	assert.Equal(t, "poll_closed", ps[ada]["terminationReason"])
	_, ps = tn.participants(two, "")
	assert.Empty(t, ps[bob]["responses"], "the first poll's answers are not the second's")
	for _, who := range []string{ada, bob, cy} {
		eventually(t, 30*time.Second, who+" in the second poll", func() bool {
			return slices.Contains(tn.outgoing(who), "Second poll: rate us 1-5")
		})
	}
	e.text(tn.number, ada, "5, great")
	eventually(t, 30*time.Second, "ada's rating", func() bool {
		_, ps := tn.participants(two, "?status=completed")
		return ps[ada] != nil && answers(ps[ada])[0] == "rating=5, great"
	})

	// A scheduled start: 200 with the poll scheduled, then active by itself.
	three := tn.createPoll(second)["id"].(string)
	at := time.Now().Add(35 * time.Second).UTC().Format(time.RFC3339)
	res := tn.do("POST", "/api/polls/"+three+"/start", map[string]any{"contactFilter": map[string]any{"tags": []string{"target"}}, "scheduledFor": at})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	got := res.JSON(t)
	assert.Equal(t, "scheduled", got["status"])
	assert.Equal(t, at, got["scheduledFor"])
	eventually(t, 60*time.Second, "the scheduled poll active", func() bool { return tn.getPoll(three)["status"] == "active" })
}

// Validation names the field; another organization's poll is a missing one; a participant silent for participantTimeoutHours is terminated
// (an "hour" is 2 s here) and the poll, nobody left in it, completes.
func TestPollValidationTenancyTimeout(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, map[string]string{"CHORUS_POLL_HOUR": "2s", "CHORUS_POLL_SWEEP": "500ms"})
	tn := e.newTenant("+13125550183", 10)
	other := e.newTenant("+13125550184", 10)
	cases := map[string]struct {
		change func(map[string]any)
		field  string
	}{
		"no name":      {func(b map[string]any) { delete(b, "name") }, "name"},
		"long name":    {func(b map[string]any) { b["name"] = strings.Repeat("x", 201) }, "name"},
		"no questions": {func(b map[string]any) { b["questions"] = []map[string]any{} }, "questions"},
		"one option":   {func(b map[string]any) { q(b, 2)["options"] = q(b, 2)["options"].([]map[string]any)[:1] }, "questions[2].options"},
		"gap":          {func(b map[string]any) { q(b, 2)["questionNumber"] = 4 }, "questions[2].questionNumber"},
		"type":         {func(b map[string]any) { q(b, 1)["type"] = "essay" }, "questions[1].type"},
		"responseCode": {func(b map[string]any) { q(b, 2)["responseCode"] = "color" }, "questions[2].responseCode"},
		"condition": {func(b map[string]any) {
			q(b, 0)["branchingLogic"] = map[string]any{"condition": "Z", "nextQuestion": 3}
		}, "questions[0].branchingLogic.condition"},
		"backwards": {func(b map[string]any) {
			q(b, 0)["branchingLogic"] = map[string]any{"condition": "A", "nextQuestion": 1}
		}, "questions[0].branchingLogic.nextQuestion"},
		"target required": {func(b map[string]any) { b["completionTargetEnabled"] = true }, "completionTarget"},
		"target positive": {func(b map[string]any) { b["completionTarget"] = 0 }, "completionTarget"},
		"media":           {func(b map[string]any) { b["introMediaUrl"] = "http://127.0.0.1/x.png" }, "introMediaUrl"},
	}
	for name, c := range cases {
		body := pollBody("Valid")
		c.change(body)
		res := tn.do("POST", "/api/polls", body)
		assert.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", name, res.Body)
		if res.Status == http.StatusBadRequest {
			assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), name)
			assert.Contains(t, res.ErrFields(t), c.field, name)
		}
	}

	id := tn.createPoll(pollBody("Mine"))["id"].(string)
	for _, req := range [][2]string{{"GET", ""}, {"PUT", ""}, {"GET", "/participants"}, {"POST", "/start"}, {"POST", "/pause"}, {"POST", "/close"}} {
		var body any
		if req[0] != "GET" {
			body = pollBody("Theirs")
		}
		if req[1] == "/start" {
			body = map[string]any{"contactFilter": map[string]any{"tags": []string{"x"}}}
		}
		res := other.do(req[0], "/api/polls/"+id+req[1], body)
		assert.Equal(t, http.StatusNotFound, res.Status, "%v: %s", req, res.Body)
		assert.Equal(t, "POLL_NOT_FOUND", res.ErrCode(t))
	}
	list := other.do("GET", "/api/polls", nil)
	require.Equal(t, http.StatusOK, list.Status)
	assert.Equal(t, "[]", string(list.Body))

	start := func(body map[string]any) response { return tn.do("POST", "/api/polls/"+id+"/start", body) }
	res := start(map[string]any{})
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.ErrFields(t), "segmentId")
	res = start(map[string]any{"segmentId": segOf(t, tn), "contactFilter": map[string]any{"tags": []string{"x"}}})
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.ErrFields(t), "contactFilter")
	assert.Equal(t, "draft", tn.getPoll(id)["status"], "a refused start changes nothing")

	silent := "+12025554031"
	tn.contacts("silent", []string{silent})
	body := pollBody("Silence")
	body["participantTimeoutHours"] = 1
	id = tn.createPoll(body)["id"].(string)
	assert.EqualValues(t, 1, tn.getPoll(id)["participantTimeoutHours"])
	tn.startPoll(id, "silent")
	tn.awaitAsked(silent, 1)
	done := tn.awaitPollStatus(id, "completed")
	assert.EqualValues(t, 0, done["completedCount"])
	_, ps := tn.participants(id, "")
	assert.Equal(t, "terminated", ps[silent]["status"])
	assert.Equal(t, "timed_out", ps[silent]["terminationReason"])
}

// q is question i of a poll body.
func q(b map[string]any, i int) map[string]any { return b["questions"].([]map[string]any)[i] }
