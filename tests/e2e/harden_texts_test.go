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
