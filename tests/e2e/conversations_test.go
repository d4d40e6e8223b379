package e2e

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInboundThreadReplyAndShortLink(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 10)
	contactID := tn.contact("+12025550143", "Ada", true)

	e.text("+12025550100", "(202) 555-0143", "Hi! What time do you open tomorrow?")

	res := tn.do("GET", "/api/conversations", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	var list []map[string]any
	require.NoError(t, jsonUnmarshal(res.Body, &list))
	require.Len(t, list, 1)
	conv := list[0]
	assert.Equal(t, "+12025550143", conv["phoneNumber"])
	assert.Equal(t, contactID, conv["contactId"])
	assert.Equal(t, "Ada", conv["firstName"])
	assert.Equal(t, "Test", conv["lastName"])
	assert.Equal(t, "Hi! What time do you open tomorrow?", conv["lastMessage"])
	assert.NotEmpty(t, conv["lastMessageAt"])
	assert.Equal(t, 1.0, conv["unreadCount"])
	assert.Equal(t, false, conv["isArchived"])
	assert.Equal(t, false, conv["isStarred"])
	for _, q := range []string{"unread=true", "unresponded=true", "search=ada", "search=555-0143"} {
		assert.Len(t, conversations(t, tn, q), 1, q)
	}
	assert.Empty(t, conversations(t, tn, "search=Grace"))

	msgs := tn.thread("+12025550143")
	require.Len(t, msgs, 1)
	in := msgs[0]
	assert.Equal(t, "incoming", in["direction"])
	assert.Nil(t, in["status"])
	assert.Nil(t, in["mediaUrl"])
	assert.Equal(t, []any{}, in["mediaUrls"])
	assert.Equal(t, "question", in["messageCategory"])
	assert.Equal(t, true, in["requiresResponse"])
	assert.Equal(t, false, in["optOutDetected"])
	assert.Contains(t, []any{"positive", "neutral", "negative"}, in["sentiment"])
	assert.IsType(t, 0.0, in["sentimentScore"])
	res = tn.do("GET", "/api/conversations/"+url.PathEscape("(202) 555-0143")+"/messages", nil)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "America/Chicago", res.JSON(t)["timezone"])

	res = tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{
		"message": "We open at 9 \u2013 \u201chours\u201d at https://example.com/hours?day=tue.",
	})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	out := res.JSON(t)
	assert.Equal(t, true, out["success"])
	assert.Equal(t, "sandbox", out["provider"])
	assert.NotEmpty(t, out["providerMessageId"])
	log := out["messageLog"].(map[string]any)
	assert.Equal(t, "+12025550143", log["phoneNumber"])
	assert.Equal(t, "sent", log["status"])
	assert.NotEmpty(t, log["sentAt"])
	text := log["message"].(string)
	link := regexp.MustCompile(`^We open at 9 - "hours" at (http://[^ ]+/l/([0-9A-Za-z]{8}))\.$`).FindStringSubmatch(text)
	require.NotNil(t, link, "smart punctuation normalized and the URL shortened: %q", text)
	assert.Equal(t, 9.0, tn.balance(), "one SMS segment costs one credit")
	assert.Empty(t, conversations(t, tn, "unresponded=true"), "the last message is ours now")

	// The short link redirects to the original and counts the click.
	noFollow := e.noFollow()
	hit, err := noFollow.Get(link[1])
	require.NoError(t, err)
	hit.Body.Close()
	assert.Equal(t, http.StatusFound, hit.StatusCode)
	assert.Equal(t, "https://example.com/hours?day=tue", hit.Header.Get("Location"))
	missing, err := noFollow.Get(e.st.HTTPURL + "/l/ZZZZZZZZ")
	require.NoError(t, err)
	missing.Body.Close()
	assert.Equal(t, http.StatusNotFound, missing.StatusCode)

	// The sandbox reports delivery through the status path.
	eventually(t, 10*time.Second, "reply delivered", func() bool {
		return tn.thread("+12025550143")[0]["status"] == "delivered"
	})
	msgs = tn.thread("+12025550143")
	require.Len(t, msgs, 2)
	assert.Equal(t, "outgoing", msgs[0]["direction"])
	assert.Nil(t, msgs[0]["sentiment"])
	assert.Nil(t, msgs[0]["mediaUrls"])
	assert.NotContains(t, msgs[0], "messageCategory", "incoming only: absent on outgoing, never null")
	assert.NotContains(t, msgs[0], "sentimentScore", "incoming only: absent on outgoing, never null")

	res = tn.do("POST", "/api/conversations/%2B12025550143/read", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, 0.0, res.JSON(t)["unreadCount"])
	assert.Empty(t, conversations(t, tn, "unread=true"))
	assert.Equal(t, 9.0, tn.balance(), "delivery does not charge again")
}

func conversations(t *testing.T, tn *tenant, query string) []any {
	t.Helper()
	res := tn.do("GET", "/api/conversations?"+query, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	var list []any
	require.NoError(t, jsonUnmarshal(res.Body, &list))
	return list
}

func TestThreadPagesOlderWithCursor(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 0)
	for i := range 5 {
		e.text("+12025550100", "+12025550146", "message "+string(rune('a'+i)))
	}
	var seen []string
	path := "/api/conversations/%2B12025550146/messages?limit=2"
	for page := 0; ; page++ {
		require.Less(t, page, 5)
		res := tn.do("GET", path, nil)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		body := res.JSON(t)
		for _, m := range body["messages"].([]any) {
			seen = append(seen, m.(map[string]any)["message"].(string))
		}
		if body["cursor"] == "" {
			break
		}
		path = "/api/conversations/%2B12025550146/messages?limit=2&cursor=" + url.QueryEscape(body["cursor"].(string))
	}
	assert.Equal(t, []string{"message e", "message d", "message c", "message b", "message a"}, seen, "newest first, no gaps or repeats")

	for _, q := range []string{"limit=0x", "limit=201", "cursor=bogus"} {
		res := tn.do("GET", "/api/conversations/%2B12025550146/messages?"+q, nil)
		assert.Equal(t, http.StatusBadRequest, res.Status, q)
	}
	res := tn.do("GET", "/api/conversations/not-a-phone/messages", nil)
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.ErrFields(t), "phoneNumber")
}

func TestReplyErrors(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 1)
	other := e.newTenant("+12025550101", 5)
	tn.contact("+12025550143", "Ada", true)
	tn.contact("+12025550002", "Landline", true) // the sandbox lookup says landline
	tn.contact("+12025550003", "Pending", false) // the sandbox lookup never answers

	reply := func(c *tenant, phone string, body map[string]any) response {
		t.Helper()
		return c.do("POST", "/api/conversations/"+url.PathEscape(phone)+"/reply", body)
	}
	cases := []struct {
		name   string
		phone  string
		body   map[string]any
		status int
		code   string
		field  string
	}{
		{"empty message", "+12025550143", map[string]any{"message": "  "}, 400, "VALIDATION_FAILED", "message"},
		{"bad route", "+12025550143", map[string]any{"message": "hi", "forceRoute": "FAX"}, 400, "VALIDATION_FAILED", "forceRoute"},
		{"bad media", "+12025550143", map[string]any{"message": "hi", "mediaUrl": "ftp://x"}, 400, "VALIDATION_FAILED", "mediaUrl"},
		{"private media", "+12025550143", map[string]any{"message": "hi", "mediaUrl": "http://169.254.169.254/latest/meta-data/"}, 400, "VALIDATION_FAILED", "mediaUrl"},
		{"no contact", "+12025550199", map[string]any{"message": "hi"}, 400, "CONTACT_NOT_FOUND", ""},
		{"landline", "+12025550002", map[string]any{"message": "hi"}, 400, "CONTACT_NON_TEXTABLE", ""},
		{"lookup pending", "+12025550003", map[string]any{"message": "hi"}, 400, "CONTACT_LOOKUP_PENDING", ""},
		{"another org's number", "+12025550143", map[string]any{"message": "hi", "fromPhoneNumberId": other.numberID}, 403, "FORBIDDEN", ""},
		{"unknown number id", "+12025550143", map[string]any{"message": "hi", "fromPhoneNumberId": "0190f0e0-0000-7000-8000-000000000000"}, 403, "FORBIDDEN", ""},
		{"unknown field", "+12025550143", map[string]any{"message": "hi", "priority": "high"}, 400, "VALIDATION_FAILED", "priority"},
		{"too long for 1 credit", "+12025550143", map[string]any{"message": strings.Repeat("a", 481)}, 402, "INSUFFICIENT_CREDITS", ""},
	}
	for _, c := range cases {
		res := reply(tn, c.phone, c.body)
		assert.Equal(t, c.status, res.Status, "%s: %s", c.name, res.Body)
		assert.Equal(t, c.code, res.ErrCode(t), c.name)
		if c.field != "" {
			assert.Contains(t, res.ErrFields(t), c.field, c.name)
		}
	}
	assert.Equal(t, 1.0, tn.balance(), "no refused reply costs anything")
	assert.Empty(t, conversations(t, tn, ""), "no refused reply is logged")

	noNumber := e.newTenant("", 5)
	noNumber.contact("+12025550143", "Ada", true)
	res := reply(noNumber, "+12025550143", map[string]any{"message": "hi"})
	assert.Equal(t, 400, res.Status, "%s", res.Body)
	assert.Equal(t, "NO_FROM_NUMBER", res.ErrCode(t))

	res = reply(tn, "+12025550143", map[string]any{"message": "exactly one credit"})
	require.Equal(t, 200, res.Status, "%s", res.Body)
	res = reply(tn, "+12025550143", map[string]any{"message": "and now none left"})
	assert.Equal(t, http.StatusPaymentRequired, res.Status, "%s", res.Body)
	assert.Equal(t, "INSUFFICIENT_CREDITS", res.ErrCode(t))
	assert.Equal(t, 0.0, tn.balance())

	// MMS costs two credits whatever the text.
	res = reply(other, "+12025550143", map[string]any{"message": "hi"})
	assert.Equal(t, 400, res.Status, "another organization's contact is no contact: %s", res.Body)
	assert.Equal(t, "CONTACT_NOT_FOUND", res.ErrCode(t))
	other.contact("+12025550143", "Ada", true)
	res = reply(other, "+12025550143", map[string]any{"message": "a picture", "mediaUrl": "https://example.com/a.png"})
	require.Equal(t, 200, res.Status, "%s", res.Body)
	assert.Equal(t, 3.0, other.balance())
	res = reply(other, "+12025550143", map[string]any{"message": "forced", "forceRoute": "MMS"})
	require.Equal(t, 200, res.Status, "%s", res.Body)
	assert.Equal(t, 1.0, other.balance())
}

func TestStopThenStart(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 5)
	id := tn.contact("+12025550143", "Ada", true)

	e.text("+12025550100", "+12025550143", "  Stop!! ")
	contact := tn.do("GET", "/api/contacts/"+id, nil).JSON(t)
	assert.Equal(t, false, contact["isOptedIn"], "the opt-out is recorded before the webhook answers")
	assert.NotNil(t, contact["optedOutAt"])

	msgs := tn.thread("+12025550143")
	in := msgs[len(msgs)-1]
	assert.Equal(t, true, in["optOutDetected"])
	assert.Equal(t, "opt_out", in["messageCategory"])
	assert.Equal(t, false, in["requiresResponse"])
	eventually(t, 10*time.Second, "opt-out confirmation sent", func() bool {
		msgs := tn.thread("+12025550143")
		return len(msgs) == 2 && msgs[0]["direction"] == "outgoing" && msgs[0]["status"] == "delivered"
	})
	assert.Contains(t, tn.thread("+12025550143")[0]["message"], "START")
	assert.Equal(t, 5.0, tn.balance(), "the confirmation is free")

	res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "are you sure?"})
	assert.Equal(t, 400, res.Status)
	assert.Equal(t, "CONTACT_OPTED_OUT", res.ErrCode(t))

	e.text("+12025550100", "+12025550143", "start")
	assert.Equal(t, true, tn.do("GET", "/api/contacts/"+id, nil).JSON(t)["isOptedIn"])
	res = tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "welcome back"})
	assert.Equal(t, 200, res.Status, "%s", res.Body)

	e.text("+12025550100", "+12025550143", "HELP")
	eventually(t, 10*time.Second, "help answered", func() bool {
		for _, m := range tn.thread("+12025550143") {
			if m["direction"] == "outgoing" && strings.Contains(m["message"].(string), "Reply STOP") && strings.Contains(m["message"].(string), "Msg & data") {
				return true
			}
		}
		return false
	})
}

func TestInboundIsDeduplicatedAndUnknownNumbersAreRefused(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 0)
	form := url.Values{"MessageSid": {newSID()}, "From": {"+12025550143"}, "To": {"+12025550100"}, "Body": {"hello"}, "NumMedia": {"1"}, "MediaUrl0": {"https://media.example/1.jpg"}}
	for range 3 {
		res := e.webhook("/webhooks/sandbox/inbound", e.sandboxToken, "", form)
		require.Equal(t, 200, res.Status, "%s", res.Body)
		assert.Contains(t, res.Header.Get("Content-Type"), "xml")
	}
	msgs := tn.thread("+12025550143")
	require.Len(t, msgs, 1, "a carrier's retries store one message")
	assert.Equal(t, []any{"https://media.example/1.jpg"}, msgs[0]["mediaUrls"])
	assert.Equal(t, "https://media.example/1.jpg", msgs[0]["mediaUrl"])
	assert.Equal(t, 1.0, conversations(t, tn, "")[0].(map[string]any)["unreadCount"])
	assert.Equal(t, "", conversations(t, tn, "")[0].(map[string]any)["contactId"], "no contact has the number")

	form.Set("MessageSid", newSID())
	form.Set("To", "+12025550177")
	res := e.webhook("/webhooks/sandbox/inbound", e.sandboxToken, "", form)
	assert.Equal(t, 404, res.Status, "a number nobody has: %s", res.Body)

	form.Set("To", "+12025550100")
	res = e.webhook("/webhooks/sandbox/inbound", "", "", form)
	assert.Equal(t, 403, res.Status, "unsigned")
	res = e.webhook("/webhooks/sandbox/inbound", "wrong-token", "", form)
	assert.Equal(t, 403, res.Status, "signed with another token")
	assert.Len(t, tn.thread("+12025550143"), 1, "nothing stored from refused webhooks")
}

func TestThreadsAreTenantScoped(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 0)
	other := e.newTenant("+12025550101", 0)
	e.text("+12025550100", "+12025550143", "for the first org only")

	assert.Empty(t, conversations(t, other, ""))
	assert.Empty(t, other.thread("+12025550143"))
	res := other.do("POST", "/api/conversations/%2B12025550143/read", nil)
	assert.Equal(t, 404, res.Status)
	assert.Len(t, tn.thread("+12025550143"), 1)
}
