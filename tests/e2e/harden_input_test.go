package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

// A test copy keeps a real message's limits (text length, one media URL) and takes any US
// format of a number, normalized to E.164 as everywhere else.
func TestHardenTestSendLimitsAndFormats(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550263", 10)
	id := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "T", "message": "Hi {{firstName}}"}), http.StatusCreated).str("id")
	path := "/api/campaigns/" + id + "/test-send"
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"recipients": []string{"+12025556101"}, "body": strings.Repeat("x", 100000)}, "body"},
		{map[string]any{"recipients": []string{"+12025556101"}, "body": strings.Repeat("x", 1601)}, "body"},
		{map[string]any{"recipients": []string{"+12025556101"}, "body": "{{firstName}}", "mergePreviewData": map[string]any{"firstName": strings.Repeat("x", 1601)}}, "body"},
		{map[string]any{"recipients": []string{"+12025556101"}, "mediaUrls": []string{"https://example.com/1.png", "https://example.com/2.png"}}, "mediaUrls"},
		{map[string]any{"recipients": []string{"12345"}}, "recipients[0]"},
	} {
		res := tn.do("POST", path, bad.body)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
		assert.Contains(t, res.ErrFields(t), bad.field, "%s", res.Body)
	}
	res := tn.do("POST", path, map[string]any{"recipients": []string{"(202) 555-6102", "202.555.6103", "+12025556102"}, "body": strings.Repeat("y", 1600)})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	results := res.JSON(t)["results"].([]any)
	require.Len(t, results, 2, "a repeat in another format is sent once")
	assert.Equal(t, "+12025556102", results[0].(map[string]any)["to"])
	assert.Equal(t, "+12025556103", results[1].(map[string]any)["to"])
}

// Each organization has 100 free test copies per UTC day, taken atomically: of concurrent calls
// only those the allowance covers go, the rest answer 429 TEST_SEND_LIMIT_REACHED with a
// Retry-After until the next UTC day; another organization keeps its own allowance.
func TestHardenTestSendDailyAllowance(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550264", 10)
	other := e.newTenant("+13125550265", 10)
	id := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "T", "message": "Hi"}), http.StatusCreated).str("id")
	ten := make([]string, 10)
	for i := range ten {
		ten[i] = fmt.Sprintf("+1202555%04d", 6200+i)
	}
	const calls = 13
	statuses := make([]response, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = tn.do("POST", "/api/campaigns/"+id+"/test-send", map[string]any{"recipients": ten})
		}()
	}
	wg.Wait()
	sent, limited := 0, 0
	for _, res := range statuses {
		switch res.Status {
		case http.StatusOK:
			sent++
		case http.StatusTooManyRequests:
			limited++
			assert.Equal(t, "TEST_SEND_LIMIT_REACHED", res.ErrCode(t))
			retry, err := strconv.Atoi(res.Header.Get("Retry-After"))
			require.NoError(t, err)
			untilMidnight := time.Until(time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour))
			assert.InDelta(t, untilMidnight.Seconds(), retry, 60, "until the next UTC day")
		default:
			t.Errorf("unexpected answer %d %s", res.Status, res.Body)
		}
	}
	assert.Equal(t, 10, sent, "100 copies a day")
	assert.Equal(t, calls-10, limited)
	res := tn.do("POST", "/api/campaigns/"+id+"/test-send", map[string]any{"recipients": ten[:1]})
	assert.Equal(t, http.StatusTooManyRequests, res.Status, "%s", res.Body)
	assert.EqualValues(t, 10, tn.balance(), "test copies stay free")

	oid := campaignOf(t, other.do("POST", "/api/campaigns/draft", map[string]any{"name": "T", "message": "Hi"}), http.StatusCreated).str("id")
	res = other.do("POST", "/api/campaigns/"+oid+"/test-send", map[string]any{"recipients": ten[:1]})
	assert.Equal(t, http.StatusOK, res.Status, "another organization's allowance: %s", res.Body)
}
