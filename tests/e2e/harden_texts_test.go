package e2e

import (
	"net/http"
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
