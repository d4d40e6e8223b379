package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An audience filter that names nobody ({} or {"tags": []}) is refused on a campaign (draft,
// submission) and a poll start, naming contactFilter, instead of texting every contact;
// {"all": true} is how every contact is targeted, and it goes with no tags.
func TestEmptyAudienceFilterIsRefused(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550901", 100)
	tn.contacts("a", []string{"+12025559011"})
	tn.contacts("b", []string{"+12025559012"})

	refused := func(res response, field, what string) {
		t.Helper()
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", what, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), what)
		assert.Contains(t, res.ErrFields(t), field, what)
	}
	poll := tn.createPoll(map[string]any{"name": "P", "timezone": zoneWhere(12), "questions": []map[string]any{
		{"questionNumber": 1, "text": "Q?", "type": "open_ended", "responseCode": "q"}}})["id"].(string)
	for _, cf := range []map[string]any{{}, {"tags": []string{}}, {"tagsLogic": "AND"}, {"all": false}} {
		refused(tn.do("POST", "/api/campaigns", map[string]any{"name": "E", "message": "Hi", "contactFilter": cf, "timezone": zoneWhere(12)}), "contactFilter", "campaign")
		refused(tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "E", "contactFilter": cf}), "contactFilter", "draft")
		refused(tn.do("POST", "/api/polls/"+poll+"/start", map[string]any{"contactFilter": cf}), "contactFilter", "poll start")
	}
	refused(tn.do("POST", "/api/campaigns", map[string]any{"name": "E", "message": "Hi", "contactFilter": map[string]any{"all": true, "tags": []string{"a"}}}), "contactFilter.all", "all with tags")
	refused(tn.do("POST", "/api/polls/"+poll+"/start", map[string]any{"contactFilter": map[string]any{"all": true, "tags": []string{"a"}}}), "contactFilter.all", "poll all with tags")
	res := tn.do("GET", "/api/campaigns", nil)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "[]", string(res.Body), "no refused campaign or draft is stored")

	// "all": true texts every contact, and reads back as it was given.
	c := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{"name": "All", "message": "Hi all", "contactFilter": map[string]any{"all": true}, "timezone": zoneWhere(12)}), http.StatusCreated)
	assert.Equal(t, true, c["contactFilter"].(map[string]any)["all"], "%v", c)
	done := tn.awaitStatus(c.str("id"), "completed", 60*time.Second)
	assert.EqualValues(t, 2, done.num("totalCount"))
	res = tn.do("POST", "/api/polls/"+poll+"/start", map[string]any{"contactFilter": map[string]any{"all": true}})
	require.Equal(t, http.StatusAccepted, res.Status, "%s", res.Body)
	eventually(t, 30*time.Second, "both contacts in the poll", func() bool {
		_, ps := tn.participants(poll, "")
		return len(ps) == 2
	})
}

// A poll option coded or labelled as a carrier keyword (STOP, HELP, START...: answering it
// would opt the contact out, or in, or get the help text) is refused at create, naming the
// option's field; labels are unique in the question (case-insensitive) and at most 100
// characters.
func TestPollOptionsCannotBeCarrierKeywords(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550902", 100)
	withOptions := func(opts ...map[string]any) map[string]any {
		return map[string]any{"name": "K", "questions": []map[string]any{
			{"questionNumber": 1, "text": "Q?", "type": "multiple_choice", "responseCode": "q", "options": opts}}}
	}
	opt := func(code, label string) map[string]any { return map[string]any{"code": code, "label": label} }
	long := strings.Repeat("x", 101)
	for field, body := range map[string]map[string]any{
		"questions[0].options[2].code":  withOptions(opt("A", "Yes"), opt("B", "No"), opt(" Stop ", "Stop texting")),
		"questions[0].options[0].code":  withOptions(opt("end", "The end"), opt("B", "No")),
		"questions[0].options[1].code":  withOptions(opt("A", "Yes"), opt("HELP", "Help me")),
		"questions[0].options[0].label": withOptions(opt("A", "unsubscribe"), opt("B", "No")),
		"questions[0].options[1].label": withOptions(opt("A", "Yes"), opt("B", "INFO")),
	} {
		res := tn.do("POST", "/api/polls", body)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", field, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), field)
		assert.Contains(t, res.ErrFields(t), field, "%s", res.Body)
	}
	for field, body := range map[string]map[string]any{
		"questions[0].options[1].label": withOptions(opt("A", "Yes"), opt("B", " yes ")),
		"questions[0].options[0].label": withOptions(opt("A", long), opt("B", "No")),
	} {
		res := tn.do("POST", "/api/polls", body)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", field, res.Body)
		assert.Contains(t, res.ErrFields(t), field, "%s", res.Body)
	}
	// Words that merely contain a keyword are fine.
	tn.createPoll(withOptions(opt("A", "Stop by the store"), opt("B", "Ending soon"), opt("STOPS", "Bus stops")))
	res := tn.do("GET", "/api/polls", nil)
	require.Equal(t, http.StatusOK, res.Status)
	var polls []any
	require.NoError(t, jsonUnmarshal(res.Body, &polls))
	assert.Len(t, polls, 1, "no refused poll is stored")
}

// One limit for every outgoing text, 1,600 characters once merged (the replies' cap): a
// campaign or poll text over it even with its merge fields empty is refused at create, naming
// the field; a recipient whose own text merges past it gets no message (no giant SMS, no
// credits), counted failed and in displayMetrics.unsent as TEXT_TOO_LONG, while the others go.
func TestTextsOverOneMessageAreRefusedOrNotSent(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550903", 100)
	over := strings.Repeat("x", 1601)

	refused := func(path string, body map[string]any, field string) {
		t.Helper()
		res := tn.do("POST", path, body)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", field, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), field)
		assert.Contains(t, res.ErrFields(t), field, "%s", res.Body)
	}
	camp := func(extra map[string]any) map[string]any {
		b := map[string]any{"name": "L", "message": "Hi", "contactFilter": map[string]any{"tags": []string{"long"}}, "timezone": zoneWhere(12)}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	refused("/api/campaigns", camp(map[string]any{"message": over + "{{firstName}}"}), "message")
	refused("/api/campaigns/draft", camp(map[string]any{"message": "{{bio}}" + over}), "message")
	refused("/api/campaigns", camp(map[string]any{"autoReplyEnabled": true, "yesResponse": over}), "yesResponse")
	refused("/api/campaigns", camp(map[string]any{"autoReplyEnabled": true,
		"faqReplies": []map[string]any{{"question": "Parking?", "answer": over}}}), "faqReplies[0].answer")
	refused("/api/campaigns", camp(map[string]any{"isAbTest": true, "messageVariantA": "A", "messageVariantB": over}), "messageVariantB")

	pollOf := func(intro, q1, outro string) map[string]any {
		return map[string]any{"name": "L", "introductoryText": intro, "outroText": outro, "questions": []map[string]any{
			{"questionNumber": 1, "text": q1, "type": "multiple_choice", "responseCode": "q",
				"options": []map[string]any{{"code": "A", "label": "Yes"}, {"code": "B", "label": "No"}}}}}
	}
	refused("/api/polls", pollOf(strings.Repeat("i", 1600), strings.Repeat("q", 1600), ""), "introductoryText")
	refused("/api/polls", pollOf("", strings.Repeat("q", 1590), ""), "questions[0].text") // with "Please reply A or B. "
	refused("/api/polls", pollOf("", "Q?", over), "outroText")

	// The send: a 1,000-character custom field twice is over the limit for that contact only.
	tn.contacts("long", []string{"+12025559031", "+12025559032"})
	res := tn.do("GET", "/api/contacts?tags=long&search=2025559031", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	id := res.JSON(t)["contacts"].([]any)[0].(map[string]any)["id"].(string)
	res = tn.do("PUT", "/api/contacts/"+id, map[string]any{"customFields": map[string]any{"bio": strings.Repeat("b", 1000)}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)

	c := campaignOf(t, tn.do("POST", "/api/campaigns", camp(map[string]any{"message": "Hi {{bio}}{{bio}}"})), http.StatusCreated)
	done := tn.awaitStatus(c.str("id"), "completed", 60*time.Second)
	assert.EqualValues(t, 2, done.num("totalCount"))
	assert.EqualValues(t, 1, done.num("failedCount"))
	eventually(t, 30*time.Second, "sent counted", func() bool { return tn.getCampaign(c.str("id")).num("sentCount") == 1 })
	assert.Equal(t, []any{map[string]any{"reason": "TEXT_TOO_LONG", "count": float64(1)}}, tn.getCampaign(c.str("id"))["displayMetrics"].(map[string]any)["unsent"])
	assert.Empty(t, tn.thread("+12025559031"), "no giant SMS")
	assert.Len(t, tn.thread("+12025559032"), 1)
	eventually(t, 30*time.Second, "one credit spent", func() bool { return tn.balance() == 100-1 })

	// A poll: the intro with question 1, merged past the limit for that contact, is not sent;
	// the participation ends text_too_long and the other participant is asked.
	pb := pollOf("Hi {{bio}}{{bio}}", "Q1: A or B?", "")
	pb["timezone"] = zoneWhere(12)
	poll := tn.createPoll(pb)["id"].(string)
	tn.startPoll(poll, "long")
	eventually(t, 30*time.Second, "the long one terminated", func() bool {
		_, ps := tn.participants(poll, "")
		p := ps["+12025559031"]
		return p != nil && p["status"] == "terminated" && p["terminationReason"] == "text_too_long"
	})
	eventually(t, 30*time.Second, "the other asked", func() bool { return len(tn.thread("+12025559032")) == 2 })
	assert.Empty(t, tn.thread("+12025559031"), "no giant SMS")
}
