package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hardening of input and of peers' refusals (issue 26).

// A suspended account's test send answers 402 BILLING_SUSPENDED as its replies do, not a 500:
// messaging's refusal is translated by campaigns, not wrapped and masked.
func TestHardenTestSendOnSuspendedAccount(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550260", 10)
	id := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "T", "message": "Hi"}), http.StatusCreated).str("id")

	e.setBillingStatus(tn.org, "suspended")
	res := tn.doWith("POST", "/api/campaigns/"+id+"/test-send", map[string]any{"recipients": []string{"+12025556101"}},
		http.Header{"X-Request-Id": {"req-suspended-test"}})
	assert.Equal(t, http.StatusPaymentRequired, res.Status, "%s", res.Body)
	assert.JSONEq(t, `{"error":{"code":"BILLING_SUSPENDED","message":"the organization's billing is suspended","requestId":"req-suspended-test"}}`, string(res.Body))

	e.setBillingStatus(tn.org, "active")
	res = tn.do("POST", "/api/campaigns/"+id+"/test-send", map[string]any{"recipients": []string{"+12025556101"}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
}

// One body rule on every route: trailing data after the JSON value is a 400, on campaign and
// poll routes (whose body is one field of the request) as on contacts; nothing is created.
func TestHardenTrailingDataIsRefusedOnEveryRoute(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550261", 10)
	id := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "T", "message": "Hi"}), http.StatusCreated).str("id")
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/contacts", `{"firstName":"a"} garbage`},
		{"POST", "/api/campaigns/draft", `{"name":"a"} garbage`},
		{"POST", "/api/campaigns", `{"name":"a","message":"m"} {"name":"b"}`},
		{"PUT", "/api/campaigns/" + id + "/draft", `{"name":"a"} x`},
		{"POST", "/api/polls", `{"name":"a"} garbage`},
		{"POST", "/api/campaigns/" + id + "/test-send", `{"recipients":["+12025556101"]} garbage`},
	} {
		res := tn.do(r.method, r.path, []byte(r.body))
		require.Equal(t, http.StatusBadRequest, res.Status, "%s %s: %s", r.method, r.path, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), "%s %s", r.method, r.path)
		assert.Equal(t, "malformed JSON body", res.JSON(t)["error"].(map[string]any)["message"], "%s %s", r.method, r.path)
	}
	res := tn.do("GET", "/api/campaigns", nil)
	require.Equal(t, http.StatusOK, res.Status)
	var list []any
	require.NoError(t, jsonUnmarshal(res.Body, &list))
	assert.Len(t, list, 1, "nothing created")
}

// A refused value names its JSON path; a NUL names the field holding it, not the request's
// wrapper; an unknown or repeated query parameter is a 400 naming it.
func TestHardenErrorsNameTheJSONPath(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550262", 10)
	id := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "T", "message": "Hi"}), http.StatusCreated).str("id")
	for _, r := range []struct{ method, path, body, field string }{
		{"POST", "/api/campaigns/draft", `{"contactFilter":"vip"}`, "contactFilter"},
		{"POST", "/api/campaigns/draft", `{"contactFilter":{"tags":"a"}}`, "contactFilter.tags"},
		{"POST", "/api/campaigns/draft", `{"contactFilter":{"tags":["a",1]}}`, "contactFilter.tags[1]"},
		{"POST", "/api/campaigns/draft", `{"faqReplies":{}}`, "faqReplies"},
		{"POST", "/api/campaigns/draft", `{"name":"a\u0000b"}`, "name"},
		{"POST", "/api/campaigns/draft", `{"contactFilter":{"tags":["a","b\u0000"]}}`, "contactFilter.tags[1]"},
		{"POST", "/api/polls", `{"name":"p","questions":[{"text":"q\u0000"}]}`, "questions[0].text"},
		{"POST", "/api/polls", `{"name":"p","questions":[{"questionNumber":"one"}]}`, "questions[0].questionNumber"},
		{"POST", "/api/campaigns/" + id + "/test-send", `{"recipients":"x"}`, "recipients"},
		{"POST", "/api/campaigns/" + id + "/test-send", `{"recipients":["+12025556101"],"mergePreviewData":{"a":1}}`, "mergePreviewData.a"},
		{"POST", "/api/campaigns/draft", `{"contactFilter":{"tagz":["a"]}}`, "contactFilter.tagz"},
	} {
		res := tn.do(r.method, r.path, []byte(r.body))
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", r.body, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), r.body)
		assert.Equal(t, []string{r.field}, fieldNames(res.ErrFields(t)), "%s: %s", r.body, res.Body)
	}
	for _, r := range []struct{ path, field string }{
		{"/api/contacts?tag=vip", "tag"},
		{"/api/contacts?limit=1&limit=2", "limit"},
		{"/api/campaigns?status=draft", "status"},
		{"/api/campaigns/" + id + "?expand=1", "expand"},
		{"/api/conversations?archived=true", "archived"},
		{"/api/polls/" + id + "/participants?state=completed", "state"},
		{"/api/analytics/overview?from=2026-01-01", "from"},
		{"/api/analytics/export?type=campaigns&type=campaigns", "type"},
	} {
		res := tn.do("GET", r.path, nil)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", r.path, res.Body)
		assert.Equal(t, []string{r.field}, fieldNames(res.ErrFields(t)), "%s: %s", r.path, res.Body)
	}
	res := tn.do("GET", "/api/contacts?tags=vip&limit=5", nil)
	assert.Equal(t, http.StatusOK, res.Status, "documented parameters: %s", res.Body)
}


// fieldNames are the fields an error names.
func fieldNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
