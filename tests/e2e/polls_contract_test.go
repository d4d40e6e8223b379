package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every answer that carries a poll gives options only to its multiple_choice questions: an
// open_ended question has no options field at all (the spec's options are 2 to 9 items), on
// create, read, list, update, a scheduled start, pause and close.
func TestPollOpenEndedQuestionsHaveNoOptions(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550185", 10)
	tn.contacts("shape", []string{"+12025554051"})

	check := func(what string, p map[string]any) {
		t.Helper()
		qs := p["questions"].([]any)
		require.Len(t, qs, 3, what)
		for _, raw := range qs {
			q := raw.(map[string]any)
			opts, has := q["options"]
			switch q["type"] {
			case "open_ended":
				assert.False(t, has, "%s: open_ended question %v carries options: %v", what, q["questionNumber"], opts)
			default:
				assert.Len(t, opts, 2, "%s: multiple_choice question %v", what, q["questionNumber"])
			}
		}
	}
	ok := func(res response) map[string]any {
		t.Helper()
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		return res.JSON(t)
	}

	p := tn.createPoll(pollBody("Shapes"))
	check("create", p)
	id := p["id"].(string)
	check("get", tn.getPoll(id))
	check("update", ok(tn.do("PUT", "/api/polls/"+id, pollBody("Shapes again"))))
	list := tn.do("GET", "/api/polls", nil)
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Body)
	var polls []map[string]any
	require.NoError(t, jsonUnmarshal(list.Body, &polls))
	require.Len(t, polls, 1)
	check("list", polls[0])

	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	check("scheduled start", ok(tn.do("POST", "/api/polls/"+id+"/start",
		map[string]any{"contactFilter": map[string]any{"tags": []string{"shape"}}, "scheduledFor": later})))

	now := tn.createPoll(pollBody("Now"))["id"].(string)
	tn.startPoll(now, "shape")
	check("pause", ok(tn.do("POST", "/api/polls/"+now+"/pause", nil)))
	check("close", ok(tn.do("POST", "/api/polls/"+now+"/close", nil)))
}

// A multiple_choice question takes only its option codes (trimmed, case-insensitive): a reply
// of an option's label gets the re-ask listing the codes and is not stored as an answer.
func TestPollAnswersAreOptionCodes(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550186", 20)
	ada := "+12025554061"
	tn.contacts("codes", []string{ada})
	id := tn.createPoll(pollBody("Codes"))["id"].(string)
	tn.startPoll(id, "codes")
	tn.awaitAsked(ada, 1)

	e.text(tn.number, ada, "Red")
	assert.Equal(t, "Please reply A or B. "+pollQ1, tn.awaitAsked(ada, 2)[1], "a label is no answer")
	_, ps := tn.participants(id, "")
	assert.Empty(t, ps[ada]["responses"], "the label is not stored as an answer")
	assert.EqualValues(t, 1, ps[ada]["currentQuestionNumber"])

	e.text(tn.number, ada, " a\n")
	assert.Equal(t, pollQ2, tn.awaitAsked(ada, 3)[2], "the code, trimmed and in any case, answers")
	_, ps = tn.participants(id, "")
	assert.Equal(t, []string{"color=a"}, answers(ps[ada]))
}

// A poll started at night in its zone answers 202 and is active, as the spec's state table
// says (campaigns keep their QUIET_HOURS error): its participants begin, and its messages wait
// for 08:00-21:00 in the poll's zone and in each recipient's own, as a daytime poll's message
// to a recipient at night does, while a daytime recipient of a daytime poll gets hers.
func TestPollStartedAtNightIsActiveAndWaits(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550187", 20)
	ada, bob, cy := "+12025554071", "+12025554072", "+12025554073"
	tn.contacts("night", []string{ada})
	tn.contacts("day", []string{bob})
	tn.contactsIn("day", zoneWhere(3), []string{cy})

	night := pollBody("Night")
	night["timezone"] = zoneWhere(3)
	id := tn.createPoll(night)["id"].(string)
	tn.startPoll(id, "night") // 202, active
	day := tn.createPoll(pollBody("Day"))["id"].(string)
	tn.startPoll(day, "day")

	assert.Equal(t, "Hi Ada0! Three quick questions.\n\n"+pollQ1, tn.awaitAsked(bob, 1)[0], "daytime in both zones: sent")
	assert.Equal(t, "active", tn.getPoll(id)["status"])
	_, ps := tn.participants(id, "")
	require.Contains(t, ps, ada)
	assert.Equal(t, "in_progress", ps[ada]["status"], "the participant began")
	tn.stays(ada, 0)
	assert.Empty(t, tn.thread(ada), "nothing handed over at night in the poll's zone")
	assert.Empty(t, tn.thread(cy), "nothing handed over at night in the recipient's zone")
}
