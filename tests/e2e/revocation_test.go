package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// outgoing counts the messages of a thread sent to the contact.
func outgoing(thread []map[string]any) int {
	n := 0
	for _, m := range thread {
		if m["direction"] == "outgoing" {
			n++
		}
	}
	return n
}

const revocationPhone = "+12025550143"

// textFromContact makes a tenant with a contact, delivers body from the contact, and returns
// the tenant, the contact's id and whether the contact is opted in after it.
func textFromContact(t *testing.T, bodies ...string) (*msgEnv, *tenant, string, bool) {
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 5)
	id := tn.contact(revocationPhone, "Ada", true)
	for _, body := range bodies {
		e.text("+12025550100", revocationPhone, body)
	}
	return e, tn, id, tn.do("GET", "/api/contacts/"+id, nil).JSON(t)["isOptedIn"].(bool)
}

// A contact who asks in words of their own to stop is opted out as by STOP: one confirmation,
// which a second request in words (in Spanish) does not repeat, and no reply gets through. The
// consent history records it as text:<rule> with the message.
func TestRevocationInWordsOptsOut(t *testing.T) {
	t.Parallel()
	e, tn, id, optedIn := textFromContact(t, "Please stop texting me, thanks")
	const phone = revocationPhone
	assert.False(t, optedIn, "the opt-out is recorded before the webhook answers")
	assert.NotNil(t, tn.do("GET", "/api/contacts/"+id, nil).JSON(t)["optedOutAt"])
	msgs := tn.thread(phone)
	in := msgs[len(msgs)-1]
	assert.Equal(t, true, in["optOutDetected"])
	assert.Equal(t, "opt_out", in["messageCategory"])
	assert.Equal(t, false, in["requiresResponse"])
	eventually(t, 10*time.Second, "opt-out confirmation sent", func() bool {
		msgs := tn.thread(phone)
		return len(msgs) == 2 && msgs[0]["direction"] == "outgoing" && msgs[0]["status"] == "delivered"
	})
	assert.Contains(t, tn.thread(phone)[0]["message"], "unsubscribed")

	e.text("+12025550100", phone, "bórrenme de la lista")
	assert.Equal(t, 1, outgoing(tn.thread(phone)), "exactly one confirmation")
	history := tn.consentHistory(id)
	require.Len(t, history, 2, "the creation and the opt-out; the second request changed nothing")
	assert.Equal(t, entry(false, "text", "stop-messaging", in["id"], "Please stop texting me, thanks", nil), entryOf(history[0]),
		"recorded as a revocation in words, with the rule and the message")
	res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "are you sure?"})
	assert.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	assert.Equal(t, "CONTACT_OPTED_OUT", res.ErrCode(t))
	assert.Equal(t, 5.0, tn.balance(), "neither the confirmation nor the refused reply costs anything")
}

// A message that may be a request to stop is left to a person: the contact stays opted in,
// nothing is answered, and the message is marked optOutDetected and requiresResponse.
func TestDoubtfulRevocationIsMarkedForAPerson(t *testing.T) {
	t.Parallel()
	_, tn, _, optedIn := textFromContact(t, "stop texting me after 9pm")
	assert.True(t, optedIn)
	msgs := tn.thread(revocationPhone)
	require.Len(t, msgs, 1, "nothing is answered")
	assert.Equal(t, true, msgs[0]["optOutDetected"])
	assert.Equal(t, true, msgs[0]["requiresResponse"])
	assert.NotEqual(t, "opt_out", msgs[0]["messageCategory"])
	res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "Sure, only before 9pm from now on"})
	assert.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
}

// Words of a revocation saying something else change nothing.
func TestRevocationLookalikesChangeNothing(t *testing.T) {
	t.Parallel()
	texts := []string{"don't stop", "stop by the store at 5", "can you remove the extra charge", "no pares", "baja el precio"}
	_, tn, _, optedIn := textFromContact(t, texts...)
	assert.True(t, optedIn)
	msgs := tn.thread(revocationPhone)
	require.Len(t, msgs, len(texts), "nothing is answered")
	for _, m := range msgs {
		assert.Equal(t, false, m["optOutDetected"], "%v", m["message"])
		assert.NotEqual(t, "opt_out", m["messageCategory"], "%v", m["message"])
	}
	res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "see you at 5"})
	assert.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
}

// A doubtful opt-out in the middle of a poll is left to a person: the message is marked
// optOutDetected and requiresResponse, the contact stays opted in, and the participant stays
// on its question (the doubtful words are no answer; the next reply is). When a person opts
// the contact out through the API, that consent change ends the participation.
func TestDoubtfulOptOutLeavesThePollParticipantToAPerson(t *testing.T) {
	t.Parallel()
	const ada = "+12025556341"
	e, rdb, tn, id := askedPoll(t, "+13125550341", ada, pollBody("Doubt"))

	e.reply(rdb, tn, ada, "leave me alone")
	in := tn.thread(ada)[0]
	require.Equal(t, "incoming", in["direction"])
	assert.Equal(t, true, in["optOutDetected"])
	assert.Equal(t, true, in["requiresResponse"])
	p := tn.participant(id, ada)
	assert.Equal(t, "in_progress", p["status"], "a doubtful opt-out ends nothing by itself")
	assert.EqualValues(t, 0, p["responseCount"], "nor is it an answer")
	contact := p["contactId"].(string)
	assert.Equal(t, true, tn.do("GET", "/api/contacts/"+contact, nil).JSON(t)["isOptedIn"])

	e.reply(rdb, tn, ada, "A")
	p = tn.participant(id, ada)
	assert.Equal(t, "in_progress", p["status"])
	assert.Equal(t, []string{"color=A"}, answers(p), "the participant still answers")

	res := tn.do("POST", "/api/contacts/"+contact+"/opt-out", map[string]any{"note": "read their message: they want no more"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	eventually(t, 30*time.Second, "the participation ended by the opt-out", func() bool {
		return tn.participant(id, ada)["status"] == "terminated"
	})
	assert.Equal(t, "opted_out", tn.participant(id, ada)["terminationReason"])
}
