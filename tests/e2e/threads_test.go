package e2e

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// patchThread sends PATCH /api/conversations/{phone} with body (nil, raw bytes or a value).
func patchThread(c *client, phone string, body any) response {
	c.e.t.Helper()
	return c.do("PATCH", "/api/conversations/"+url.PathEscape(phone), body)
}

// threadItem returns the list item of phone among the tenant's threads (archived included),
// or nil when there is none.
func threadItem(t *testing.T, tn *tenant, phone string) map[string]any {
	t.Helper()
	for _, c := range conversations(t, tn, "includeArchived=true") {
		if item := c.(map[string]any); item["phoneNumber"] == phone {
			return item
		}
	}
	return nil
}

// threadPhones lists the phoneNumber of each list item, in order.
func threadPhones(list []any) []string {
	out := make([]string, len(list))
	for i, c := range list {
		out[i], _ = c.(map[string]any)["phoneNumber"].(string)
	}
	return out
}

func TestThreadArchiveAndStar(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 5)
	tn.contact("+12025550143", "Ada", true)
	e.text("+12025550100", "+12025550143", "first thread")
	e.text("+12025550100", "+12025550144", "second thread")

	res := patchThread(tn.client, "(202) 555-0143", map[string]any{"isArchived": true})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	conv := res.JSON(t)
	assert.Equal(t, "+12025550143", conv["phoneNumber"], "any US format names the thread")
	assert.Equal(t, true, conv["isArchived"])
	assert.Equal(t, false, conv["isStarred"])
	assert.Equal(t, "Ada", conv["firstName"], "the answer is the full list item")
	assert.Equal(t, "first thread", conv["lastMessage"])
	assert.Equal(t, 1.0, conv["unreadCount"], "archiving does not read the thread")

	assert.Equal(t, []string{"+12025550144"}, threadPhones(conversations(t, tn, "")), "archived threads are hidden by default")
	assert.Equal(t, []string{"+12025550144"}, threadPhones(conversations(t, tn, "unread=true")), "filters do not bring archived threads back")
	assert.Equal(t, []string{"+12025550144", "+12025550143"}, threadPhones(conversations(t, tn, "includeArchived=true")))
	assert.Equal(t, []string{"+12025550144", "+12025550143"}, threadPhones(conversations(t, tn, "unread=true&includeArchived=true")))
	assert.Len(t, tn.thread("+12025550143"), 1, "an archived thread's messages stay readable")

	// Only the flags present in the body change.
	res = patchThread(tn.client, "+12025550143", map[string]any{"isStarred": true})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, true, res.JSON(t)["isStarred"])
	assert.Equal(t, true, res.JSON(t)["isArchived"], "starring keeps the thread archived")
	res = patchThread(tn.client, "+12025550144", map[string]any{"isStarred": true, "isArchived": false})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	item := conversations(t, tn, "")[0].(map[string]any)
	assert.Equal(t, "+12025550144", item["phoneNumber"])
	assert.Equal(t, true, item["isStarred"], "the list item shows the star")
	assert.Equal(t, false, item["isArchived"])
	res = patchThread(tn.client, "+12025550144", map[string]any{"isStarred": false})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, false, threadItem(t, tn, "+12025550144")["isStarred"], "unstarred")

	// An outgoing message leaves the thread archived (a campaign must not resurface every
	// archived thread); a new inbound message brings it back, still starred.
	res = tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "still there?"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	item = threadItem(t, tn, "+12025550143")
	assert.Equal(t, true, item["isArchived"], "our own reply does not unarchive")
	assert.Equal(t, "still there?", item["lastMessage"])
	e.text("+12025550100", "+12025550143", "yes, I'm back")
	list := conversations(t, tn, "")
	require.Equal(t, []string{"+12025550143", "+12025550144"}, threadPhones(list), "the answered thread is back, on top")
	item = list[0].(map[string]any)
	assert.Equal(t, false, item["isArchived"])
	assert.Equal(t, true, item["isStarred"], "the star survives")
	assert.Equal(t, "yes, I'm back", item["lastMessage"])
	assert.Equal(t, 2.0, item["unreadCount"])

	res = patchThread(tn.client, "+12025550143", map[string]any{"isArchived": true})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	res = patchThread(tn.client, "+12025550143", map[string]any{"isArchived": false})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, []string{"+12025550143", "+12025550144"}, threadPhones(conversations(t, tn, "")), "unarchived by hand")
}

func TestThreadUpdateIsRefused(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 0)
	other := e.newTenant("+12025550101", 0)
	e.text("+12025550100", "+12025550143", "for the first org only")
	e.text("+12025550100", "+12025550144", "another thread")
	e.text("+12025550101", "+12025550145", "the other org's own thread")

	cases := []struct {
		name  string
		phone string
		body  any
		field string
	}{
		{"unknown field", "+12025550143", map[string]any{"archived": true}, "archived"},
		{"string for a boolean", "+12025550143", map[string]any{"isArchived": "yes"}, "isArchived"},
		{"number for a boolean", "+12025550143", map[string]any{"isStarred": 1}, "isStarred"},
		{"not JSON", "+12025550143", []byte(`{"isArchived":`), ""},
		{"two JSON values", "+12025550143", []byte(`{"isArchived":true}{"isStarred":true}`), ""},
		{"not a phone", "not-a-phone", map[string]any{"isArchived": true}, "phoneNumber"},
	}
	for _, c := range cases {
		res := patchThread(tn.client, c.phone, c.body)
		assert.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", c.name, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), c.name)
		if c.field != "" {
			assert.Contains(t, res.ErrFields(t), c.field, c.name)
		}
	}

	// A thread of another organization is answered exactly like one that does not exist.
	missing := patchThread(tn.client, "+12025550199", map[string]any{"isArchived": true})
	foreign := patchThread(tn.client, "+12025550145", map[string]any{"isArchived": true})
	theirs := patchThread(other.client, "+12025550143", map[string]any{"isArchived": true})
	for name, res := range map[string]response{"missing": missing, "foreign": foreign, "theirs": theirs} {
		assert.Equal(t, http.StatusNotFound, res.Status, "%s: %s", name, res.Body)
		assert.Equal(t, "NOT_FOUND", res.ErrCode(t), name)
		assert.Equal(t, missing.JSON(t)["error"].(map[string]any)["message"], res.JSON(t)["error"].(map[string]any)["message"], name)
	}
	assert.Equal(t, []string{"+12025550145"}, threadPhones(conversations(t, other, "includeArchived=true")), "no thread was created by the attempt")

	e.member(tn.org, "reader-"+tn.org, "read")
	reader := e.as("reader-"+tn.org, tn.org)
	res := patchThread(reader, "+12025550143", map[string]any{"isArchived": true})
	assert.Equal(t, http.StatusForbidden, res.Status, "%s", res.Body)
	assert.Equal(t, "FORBIDDEN", res.ErrCode(t))
	res = reader.do("GET", "/api/conversations", nil)
	assert.Equal(t, http.StatusOK, res.Status, "a reader still sees the threads: %s", res.Body)

	// The path names the thread; a phoneNumber in the body cannot point the change elsewhere.
	res = patchThread(tn.client, "+12025550143", map[string]any{"phoneNumber": "+12025550144", "isStarred": true})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, "+12025550143", res.JSON(t)["phoneNumber"])

	// Nothing refused above changed anything.
	a, b := threadItem(t, tn, "+12025550143"), threadItem(t, tn, "+12025550144")
	assert.Equal(t, false, a["isArchived"])
	assert.Equal(t, true, a["isStarred"])
	assert.Equal(t, false, b["isArchived"])
	assert.Equal(t, false, b["isStarred"])
	assert.Equal(t, false, threadItem(t, other, "+12025550145")["isArchived"])
}

func TestThreadUnreadUnrespondedAndRead(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 5)
	tn.contact("+12025550144", "Bea", true)
	tn.contact("+12025550146", "Dee", true)
	read := func(c *client, phone string) response {
		t.Helper()
		return c.do("POST", "/api/conversations/"+url.PathEscape(phone)+"/read", nil)
	}
	reply := func(phone string) {
		t.Helper()
		res := tn.do("POST", "/api/conversations/"+url.PathEscape(phone)+"/reply", map[string]any{"message": "thanks"})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	}
	// A: two unread, unanswered. B: read and answered. C: read, unanswered. D: answered unread.
	e.text("+12025550100", "+12025550143", "a1")
	e.text("+12025550100", "+12025550144", "b1")
	e.text("+12025550100", "+12025550145", "c1")
	e.text("+12025550100", "+12025550146", "d1")
	e.text("+12025550100", "+12025550143", "a2")
	require.Equal(t, http.StatusOK, read(tn.client, "+12025550144").Status)
	reply("+12025550144")
	res := read(tn.client, "(202) 555-0145")
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	conv := res.JSON(t)
	assert.Equal(t, "+12025550145", conv["phoneNumber"])
	assert.Equal(t, 0.0, conv["unreadCount"])
	assert.Equal(t, "c1", conv["lastMessage"], "the answer is the whole list item")
	reply("+12025550146")

	assert.Equal(t, []string{"+12025550146", "+12025550144", "+12025550143", "+12025550145"}, threadPhones(conversations(t, tn, "")), "most recent first")
	assert.Equal(t, []string{"+12025550146", "+12025550143"}, threadPhones(conversations(t, tn, "unread=true")), "a reply does not mark the thread read")
	assert.Equal(t, []string{"+12025550143", "+12025550145"}, threadPhones(conversations(t, tn, "unresponded=true")))
	assert.Equal(t, []string{"+12025550143"}, threadPhones(conversations(t, tn, "unread=true&unresponded=true")))
	assert.Equal(t, []string{"+12025550146", "+12025550144"}, threadPhones(conversations(t, tn, "limit=2")))
	assert.Equal(t, 2.0, threadItem(t, tn, "+12025550143")["unreadCount"], "each inbound message counts")
	assert.Len(t, conversations(t, tn, "limit=501"), 4, "limit only caps the list")
	for _, q := range []string{"unread=yes", "limit=0", "limit=-1"} {
		res := tn.do("GET", "/api/conversations?"+q, nil)
		assert.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", q, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), q)
	}
	assert.Contains(t, tn.do("GET", "/api/conversations?unread=yes", nil).ErrFields(t), "unread")
	assert.Contains(t, tn.do("GET", "/api/conversations?limit=0", nil).ErrFields(t), "limit")

	// Reading is for writers; reading twice is harmless; a new message counts from zero again.
	e.member(tn.org, "reader-"+tn.org, "read")
	reader := e.as("reader-"+tn.org, tn.org)
	res = read(reader, "+12025550143")
	assert.Equal(t, http.StatusForbidden, res.Status, "%s", res.Body)
	assert.Equal(t, 2.0, threadItem(t, tn, "+12025550143")["unreadCount"], "the reader's attempt read nothing")
	for range 2 {
		res = read(tn.client, "+12025550143")
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		assert.Equal(t, 0.0, res.JSON(t)["unreadCount"])
	}
	assert.Equal(t, []string{"+12025550146"}, threadPhones(conversations(t, tn, "unread=true")), "the other threads keep their count")
	e.text("+12025550100", "+12025550143", "a3")
	assert.Equal(t, 1.0, threadItem(t, tn, "+12025550143")["unreadCount"])
	assert.Equal(t, []string{"+12025550143", "+12025550146"}, threadPhones(conversations(t, tn, "unread=true")))
	assert.Len(t, tn.thread("+12025550143"), 3, "reading removes no message")
}
