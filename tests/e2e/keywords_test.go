package e2e

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/sandbox"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

const keywordNumber = "+12025550100"

// joinKeyword is a valid sign-up keyword body.
func joinKeyword(word string) map[string]any {
	return map[string]any{"keyword": word, "tag": "vip", "confirmation": "Thanks for joining our VIP club!", "frequency": "Up to 4 msgs/month"}
}

// pizzeria is an organization named Joe's Pizza with a number and 5 credits, and the keyword
// JOIN tagging its subscribers "vip".
func pizzeria(t *testing.T, e *msgEnv) *tenant {
	tn := e.newTenantOf(&orgsv1.CreateOrganizationRequest{Name: "Joe's Pizza", Timezone: "America/Chicago"}, keywordNumber, 5)
	res := tn.do("POST", "/api/keywords", joinKeyword("join"))
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	return tn
}

// contactByPhone finds the tenant's contact with phone through the list's search.
func contactByPhone(t *testing.T, tn *tenant, phone string) map[string]any {
	t.Helper()
	res := tn.do("GET", "/api/contacts?search="+url.QueryEscape(phone), nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	list := res.JSON(t)["contacts"].([]any)
	require.Len(t, list, 1, "one contact has %s", phone)
	return list[0].(map[string]any)
}

// awaitConfirmations waits until the thread with phone has `want` delivered outgoing messages,
// then makes sure no other one follows, and answers the thread.
func awaitConfirmations(t *testing.T, tn *tenant, phone string, want int) []map[string]any {
	t.Helper()
	delivered := func() int {
		n := 0
		for _, m := range tn.thread(phone) {
			if m["direction"] == "outgoing" && m["status"] == "delivered" {
				n++
			}
		}
		return n
	}
	eventually(t, 10*time.Second, "confirmations delivered", func() bool { return delivered() >= want })
	time.Sleep(500 * time.Millisecond) // a second confirmation would be queued by now
	msgs := tn.thread(phone)
	require.Equal(t, want, outgoing(msgs), "exactly %d outgoing messages", want)
	return msgs
}

// A keyword is created (upper-cased, with the text subscribers get), listed, and deleted;
// carrier keywords, duplicates in any case and incomplete bodies are refused; another
// organization's keyword id is a 404.
func TestKeywordsCreateListDelete(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenantOf(&orgsv1.CreateOrganizationRequest{Name: "Joe's Pizza"}, keywordNumber, 0)

	res := tn.do("POST", "/api/keywords", joinKeyword(" join "))
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	kw := res.JSON(t)
	id := kw["id"].(string)
	assert.Equal(t, "JOIN", kw["keyword"])
	assert.Equal(t, "vip", kw["tag"])
	assert.Equal(t, "Joe's Pizza: Thanks for joining our VIP club! Up to 4 msgs/month. Msg & data rates may apply. Reply STOP to opt out, HELP for help.",
		kw["confirmationMessage"])

	res = tn.do("POST", "/api/keywords", joinKeyword("Join"))
	assert.Equal(t, http.StatusConflict, res.Status, "%s", res.Body)
	assert.Equal(t, "KEYWORD_TAKEN", res.ErrCode(t))

	for _, word := range []string{"STOP", "help", "Start", "YES", "unsubscribe", "stop2", "join us", ""} {
		res = tn.do("POST", "/api/keywords", joinKeyword(word))
		assert.Equal(t, http.StatusBadRequest, res.Status, "%q: %s", word, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
		assert.Contains(t, res.ErrFields(t), "keyword", word)
	}
	res = tn.do("POST", "/api/keywords", map[string]any{"keyword": "DEALS", "tag": "a,b", "confirmation": " "})
	assert.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	fields := res.ErrFields(t)
	assert.Len(t, fields, 3, "%v", fields)
	for _, f := range []string{"tag", "confirmation", "frequency"} {
		assert.Contains(t, fields, f)
	}

	res = tn.do("GET", "/api/keywords", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	list := res.JSON(t)["keywords"].([]any)
	require.Len(t, list, 1)
	assert.Equal(t, kw, list[0])

	other := e.newTenant("", 0)
	res = other.do("DELETE", "/api/keywords/"+id, nil)
	assert.Equal(t, http.StatusNotFound, res.Status, "%s", res.Body)
	assert.Empty(t, other.do("GET", "/api/keywords", nil).JSON(t)["keywords"])
	res = other.do("POST", "/api/keywords", joinKeyword("JOIN"))
	assert.Equal(t, http.StatusCreated, res.Status, "another organization may have the same keyword: %s", res.Body)

	res = tn.do("DELETE", "/api/keywords/"+id, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, map[string]any{"id": id, "deleted": true}, res.JSON(t))
	assert.Equal(t, http.StatusNotFound, tn.do("DELETE", "/api/keywords/"+id, nil).Status)
	assert.Empty(t, tn.do("GET", "/api/keywords", nil).JSON(t)["keywords"])
}

// A phone no contact has texts the keyword (any case, punctuation): it becomes an opted-in
// contact with the tag and gets exactly one free confirmation with every required part, even
// though the carrier delivers the webhook twice.
func TestKeywordSignsUpAnUnknownPhone(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := pizzeria(t, e)
	const phone = "+12025550161"

	form, err := sandbox.Text{To: keywordNumber, From: phone, Body: " Join! "}.Form()
	require.NoError(t, err)
	for range 2 {
		res := e.postInbound(form)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	}

	c := contactByPhone(t, tn, phone)
	assert.Equal(t, true, c["isOptedIn"])
	assert.Equal(t, []any{"vip"}, c["tags"])

	msgs := awaitConfirmations(t, tn, phone, 1)
	require.Len(t, msgs, 2, "the sign-up and its confirmation")
	in, out := msgs[1], msgs[0]
	assert.Equal(t, "incoming", in["direction"])
	assert.Equal(t, "opt_in", in["messageCategory"])
	assert.Equal(t, false, in["requiresResponse"])
	for _, part := range []string{"Joe's Pizza", "Thanks for joining our VIP club!", "Up to 4 msgs/month", "Msg & data rates may apply", "STOP", "HELP"} {
		assert.Contains(t, out["message"], part)
	}
	assert.Equal(t, 5.0, tn.balance(), "a keyword confirmation costs nothing")
	history := tn.consentHistory(c["id"].(string))
	require.Len(t, history, 1, "the sign-up is recorded once, though the carrier delivered it twice")
	assert.Equal(t, entry(true, "signup", "JOIN", in["id"], " Join! ", nil), entryOf(history[0]))

	// Once the keyword is deleted, its word is an ordinary message.
	id := tn.do("GET", "/api/keywords", nil).JSON(t)["keywords"].([]any)[0].(map[string]any)["id"].(string)
	require.Equal(t, http.StatusOK, tn.do("DELETE", "/api/keywords/"+id, nil).Status)
	e.text(keywordNumber, "+12025550162", "join")
	time.Sleep(300 * time.Millisecond)
	msgs = tn.thread("+12025550162")
	require.Len(t, msgs, 1, "nothing answers it")
	assert.NotEqual(t, "opt_in", msgs[0]["messageCategory"])
	res := tn.do("GET", "/api/contacts?search="+url.QueryEscape("+12025550162"), nil)
	assert.Empty(t, res.JSON(t)["contacts"], "nobody is signed up")
}

// A contact who opted out and texts the keyword is opted back in, keeps their tags and gains
// the keyword's, and gets the confirmation.
func TestKeywordOptsAnOptedOutContactBackIn(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := pizzeria(t, e)
	const phone = "+12025550163"
	res := tn.do("POST", "/api/contacts", map[string]any{"phone": phone, "firstName": "Ada", "tags": []string{"regular"}})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	id := res.JSON(t)["id"].(string)

	e.text(keywordNumber, phone, "STOP")
	assert.Equal(t, false, tn.do("GET", "/api/contacts/"+id, nil).JSON(t)["isOptedIn"])
	awaitConfirmations(t, tn, phone, 1)

	e.text(keywordNumber, phone, "join")
	got := tn.do("GET", "/api/contacts/"+id, nil).JSON(t)
	assert.Equal(t, true, got["isOptedIn"])
	assert.Nil(t, got["optedOutAt"])
	assert.Equal(t, []any{"regular", "vip"}, got["tags"])
	assert.Equal(t, "Ada", got["firstName"])
	msgs := awaitConfirmations(t, tn, phone, 2)
	assert.Contains(t, msgs[0]["message"], "Thanks for joining our VIP club!")
	assert.Contains(t, msgs[0]["message"], "Msg & data rates may apply")
	var sources []any
	for _, h := range tn.consentHistory(id) {
		sources = append(sources, h["source"])
	}
	assert.Equal(t, []any{"signup", "keyword", "api"}, sources, "newest first: the sign-up, the STOP, the creation")
}
