package e2e

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// consentHistory reads a contact's consent history over REST, newest first.
func (tn *tenant) consentHistory(id string) []map[string]any {
	t := tn.e.t
	t.Helper()
	res := tn.do("GET", "/api/contacts/"+id+"/consent", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	var out []map[string]any
	for _, it := range res.JSON(t)["entries"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// consentExport reads the consent export of a range over REST as CSV records.
func (tn *tenant) consentExport(start, end string) [][]string {
	t := tn.e.t
	t.Helper()
	res := tn.do("GET", "/api/consent/export?"+url.Values{"start": {start}, "end": {end}}.Encode(), nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, "text/csv; charset=utf-8", res.Header.Get("Content-Type"))
	rows, err := csv.NewReader(strings.NewReader(string(res.Body))).ReadAll()
	require.NoError(t, err)
	return rows
}

// entryOf is the part of a history entry the test compares: all but the times.
func entryOf(m map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"optedIn", "source", "detail", "messageId", "messageText", "user", "importId"} {
		out[k] = m[k]
	}
	return out
}

func entry(optedIn bool, source string, detail, messageID, messageText, user any) map[string]any {
	return map[string]any{"optedIn": optedIn, "source": source, "detail": detail, "messageId": messageID,
		"messageText": messageText, "user": user, "importId": nil}
}

// A contact's consent history over REST: its creation, a STOP and a START texted through the
// sandbox carrier's webhook (with the inbound messages' ids and texts; a repeated STOP adds
// nothing), the carrier's 21610 on a status callback, and an opt-out a user records with a
// note. The export has the organization's changes in the range only; another organization
// sees none of it; deleting the contact deletes its history.
func TestConsentHistoryOverREST(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 10)
	const phone = "+12025550143"
	user := "user-" + tn.org
	id := tn.contact(phone, "Ada", true)

	e.text(tn.number, phone, "STOP")
	e.text(tn.number, phone, "stop")
	e.text(tn.number, phone, "Start")
	incoming := map[string]string{} // text → our message id
	for _, m := range tn.thread(phone) {
		if m["direction"] == "incoming" {
			incoming[m["message"].(string)] = m["id"].(string)
		}
	}
	require.Len(t, incoming, 3)
	startedAt := time.Now().UTC()
	time.Sleep(5 * time.Millisecond)

	// The carrier says the recipient unsubscribed (Twilio 21610) in a reply's status callback.
	res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "see you soon"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	msgID := res.JSON(t)["messageLog"].(map[string]any)["id"].(string)
	cb := e.webhook("/webhooks/sandbox/status?messageId="+msgID, e.sandboxToken, "",
		url.Values{"MessageSid": {"SMconsent21610"}, "MessageStatus": {"failed"}, "ErrorCode": {"21610"}})
	require.Equal(t, http.StatusOK, cb.Status, "%s", cb.Body)

	e.text(tn.number, phone, "START")
	res = tn.do("POST", "/api/contacts/"+id+"/opt-out", map[string]any{"note": "asked by phone call"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, false, res.JSON(t)["isOptedIn"])
	startID := ""
	for _, m := range tn.thread(phone) {
		if m["direction"] == "incoming" && m["message"] == "START" {
			startID = m["id"].(string)
		}
	}

	history := tn.consentHistory(id)
	var got []map[string]any
	for _, h := range history {
		got = append(got, entryOf(h))
	}
	assert.Equal(t, []map[string]any{
		entry(false, "api", "asked by phone call", nil, nil, user),
		entry(true, "keyword", "START", startID, "START", nil),
		entry(false, "carrier", "21610", nil, nil, nil),
		entry(true, "keyword", "START", incoming["Start"], "Start", nil),
		entry(false, "keyword", "STOP", incoming["STOP"], "STOP", nil),
		entry(true, "api", nil, nil, nil, user),
	}, got, "one entry per change, newest first; the second STOP changed nothing")

	// The export: the whole day, then from the reply on.
	rows := tn.consentExport(startedAt.Format(time.DateOnly), "")
	require.Len(t, rows, 1+6, "the header and the six changes: %v", rows)
	assert.Equal(t, []string{"contactId", "phone", "occurredAt", "optedIn", "source", "detail", "messageId", "messageText", "user", "importId"}, rows[0])
	assert.Equal(t, []string{id, phone}, rows[1][:2])
	assert.Equal(t, []string{"true", "api", "", "", "", user, ""}, rows[1][3:], "oldest first: the creation")
	assert.Equal(t, []string{"false", "keyword", "STOP", incoming["STOP"], "STOP", "", ""}, rows[2][3:])
	later := tn.consentExport(startedAt.Format(time.RFC3339Nano), "")
	require.Len(t, later, 1+3, "only what occurred from the reply on: %v", later)
	assert.Equal(t, []string{"false", "carrier", "21610"}, later[1][3:6])
	assert.Len(t, tn.consentExport("2020-01-01", "2020-01-31"), 1, "an earlier range: the header alone")

	for _, tc := range []struct{ query, field string }{
		{"start=yesterday", "start"}, {"end=2026-02-30", "end"}, {"start=2026-01-10&end=2026-01-09", "end"},
	} {
		res := tn.do("GET", "/api/consent/export?"+tc.query, nil)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", tc.query, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
		assert.Contains(t, res.ErrFields(t), tc.field, tc.query)
	}

	// Another organization: the contact's id is a missing one, its export is empty.
	other := e.newTenant("", 0)
	res = other.do("GET", "/api/contacts/"+id+"/consent", nil)
	assert.Equal(t, http.StatusNotFound, res.Status, "%s", res.Body)
	assert.Equal(t, "NOT_FOUND", res.ErrCode(t))
	res = other.do("POST", "/api/contacts/"+id+"/opt-out", map[string]any{})
	assert.Equal(t, http.StatusNotFound, res.Status, "%s", res.Body)
	assert.Len(t, other.consentExport(startedAt.Format(time.DateOnly), ""), 1)

	// Deleting the contact deletes its history.
	res = tn.do("DELETE", "/api/contacts/"+id, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	res = tn.do("GET", "/api/contacts/"+id+"/consent", nil)
	assert.Equal(t, http.StatusNotFound, res.Status, "%s", res.Body)
	assert.Len(t, tn.consentExport(startedAt.Format(time.DateOnly), ""), 1, "a deleted contact's history is gone")
}

// A contact an import creates is recorded as opted in by that import, with the import's id.
func TestImportRecordsConsentWithTheImport(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("", 0)
	imp := tn.importDone("phone,firstName\n2025550172,Grace\n")
	require.EqualValues(t, 1, imp["created"])
	grace := tn.contactByPhone("2025550172")
	history := tn.consentHistory(grace["id"].(string))
	require.Len(t, history, 1)
	assert.Equal(t, true, history[0]["optedIn"])
	assert.Equal(t, "import", history[0]["source"])
	assert.Equal(t, imp["id"], history[0]["importId"])
}

// An imported contact's history over REST, a page of one at a time: a STOP texted after the
// import, then the contact's creation by the import (with the import's id). The export has
// the import's creations, oldest first, then the STOP; another organization sees none of it.
func TestImportedContactConsentHistoryOverREST(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 10)
	const phone = "+12025550146"
	startedAt := time.Now().UTC()
	imp := tn.importDone("phone,firstName\n2025550146,Ada\n2025550147,Grace\n")
	require.EqualValues(t, 2, imp["created"])
	importID := imp["id"].(string)
	ada, grace := tn.contactByPhone("2025550146"), tn.contactByPhone("2025550147")
	id := ada["id"].(string)
	e.text(tn.number, phone, "STOP")
	stopID := ""
	for _, m := range tn.thread(phone) {
		if m["direction"] == "incoming" {
			stopID = m["id"].(string)
		}
	}
	require.NotEmpty(t, stopID)

	var paged []map[string]any
	q := url.Values{"limit": {"1"}}
	for {
		res := tn.do("GET", "/api/contacts/"+id+"/consent?"+q.Encode(), nil)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		page := res.JSON(t)
		entries, _ := page["entries"].([]any)
		require.Len(t, entries, 1, "%s", res.Body)
		paged = append(paged, entries[0].(map[string]any))
		if page["hasMore"] != true {
			break
		}
		q.Set("cursor", page["cursor"].(string))
	}
	created := entry(true, "import", nil, nil, nil, nil)
	created["importId"] = importID
	var got []map[string]any
	for _, h := range paged {
		got = append(got, entryOf(h))
	}
	assert.Equal(t, []map[string]any{entry(false, "keyword", "STOP", stopID, "STOP", nil), created}, got,
		"newest first, one page each")
	assert.Equal(t, paged, tn.consentHistory(id), "the pages are the history read at once")
	assert.Equal(t, ada["createdAt"], paged[1]["occurredAt"], "the creation occurred when the contact was created")

	rows := tn.consentExport(startedAt.Format(time.DateOnly), "")
	require.Len(t, rows, 1+3, "the header, the two creations and the STOP: %v", rows)
	assert.ElementsMatch(t, [][]string{{id, phone}, {grace["id"].(string), "+12025550147"}}, [][]string{rows[1][:2], rows[2][:2]})
	for _, r := range rows[1:3] {
		assert.Equal(t, []string{"true", "import", "", "", "", "", importID}, r[3:], "oldest first: the creations")
	}
	assert.Equal(t, []string{id, phone}, rows[3][:2])
	assert.Equal(t, []string{"false", "keyword", "STOP", stopID, "STOP", "", ""}, rows[3][3:])

	other := e.newTenant("", 0)
	res := other.do("GET", "/api/contacts/"+id+"/consent", nil)
	assert.Equal(t, http.StatusNotFound, res.Status, "%s", res.Body)
	assert.Len(t, other.consentExport(startedAt.Format(time.DateOnly), ""), 1, "another organization's export: the header alone")
}
