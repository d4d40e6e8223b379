package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every error answer of POST /api/contacts carries the request's id in its body, the one the
// X-Request-Id header gives, however the body fails to decode.
func TestContactCreateErrorsCarryTheRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.newMember("write")
	bodies := map[string][]byte{
		"truncated":      []byte(`{"phone":`),
		"not an object":  []byte(`[1,2]`),
		"null":           []byte(`null`),
		"two values":     []byte(`{} {}`),
		"unknown field":  []byte(`{"nickname":"x"}`),
		"wrong type":     []byte(`{"phone":5}`),
		"tags not list":  []byte(`{"tags":"vip"}`),
		"custom fields":  []byte(`{"customFields":[1]}`),
		"invalid UTF-8":  []byte("{\"firstName\":\"\xff\"}"),
		"bad escape":     []byte(`{"firstName":"\x"}`),
		"trailing comma": []byte(`{"firstName":"a",}`),
		"huge":           []byte(`{"firstName":"` + strings.Repeat("a", 2<<20) + `"}`),
		"bad phone":      []byte(`{"phone":"12"}`),
		"empty":          []byte(``),
		"bom":            []byte("\xef\xbb\xbf{}"),
		"deep":           []byte(strings.Repeat(`{"customFields":`, 200) + "{}" + strings.Repeat("}", 200)),
		"big number":     []byte(`{"phone":1e999}`),
	}
	headers := []http.Header{nil, {"Content-Type": nil}, {"Content-Type": {"text/plain"}}, {"Content-Type": {"application/json; charset=utf-8"}},
		{"Content-Encoding": {"gzip"}}, {"X-Request-Id": {"bad id with spaces"}}, {"Accept": {"text/html"}}, {"Accept": {"application/xml"}}}
	for name, body := range bodies {
		for _, h := range headers {
			res := c.doWith("POST", "/api/contacts", body, h)
			what := fmt.Sprintf("%s %v (%d): %s", name, h, res.Status, res.Body)
			if res.Status < 400 {
				continue
			}
			var got struct {
				Error map[string]any `json:"error"`
			}
			if !assert.NoError(t, jsonUnmarshal(res.Body, &got), what) {
				continue
			}
			id := res.Header.Get("X-Request-Id")
			assert.NotEmpty(t, id, what)
			assert.Equal(t, id, got.Error["requestId"], what)
		}
	}
}

// Every error body of every route family carries the request id its X-Request-Id header gives:
// unknown routes and methods, missing, bad and foreign credentials, read-only members writing,
// bad ids, malformed bodies and query parameters, missing resources, and the rate limit's 429.
func TestEveryErrorBodyCarriesTheRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"CHORUS_RATE_LIMIT": "1", "CHORUS_RATE_BURST": "30"})
	c := e.newMember("write")
	ro := e.newMember("read")
	anon := &client{e: e}
	bad := &client{e: e, token: "x.y.z", org: c.org}
	other := &client{e: e, token: c.token}
	type probe struct {
		c            *client
		method, path string
		body         any
	}
	probes := []probe{
		{c, "GET", "/api/nope", nil}, {c, "DELETE", "/api/contacts", nil}, {c, "PATCH", "/api/campaigns", nil},
		{anon, "GET", "/api/contacts", nil}, {bad, "GET", "/api/contacts", nil}, {other, "GET", "/api/contacts", nil},
		{ro, "POST", "/api/contacts", map[string]any{"phone": "+12025550101"}},
		{c, "GET", "/api/contacts/not-a-uuid", nil}, {c, "GET", "/api/contacts/00000000-0000-0000-0000-000000000000", nil},
		{c, "GET", "/api/campaigns/x", nil}, {c, "GET", "/api/polls/00000000-0000-0000-0000-000000000000", nil},
		{c, "POST", "/api/campaigns", []byte(`{`)}, {c, "POST", "/api/polls", []byte(`{`)},
		{c, "GET", "/api/contacts?limit=abc", nil}, {c, "GET", "/api/contacts?limit=100000", nil}, {c, "GET", "/api/contacts?cursor=zzz", nil},
		{c, "GET", "/api/conversations/abc/messages", nil}, {c, "POST", "/api/conversations/%2B12025550101/reply", map[string]any{}},
		{c, "GET", "/api/analytics/overview?startDate=x", nil}, {c, "GET", "/api/analytics/export?startDate=x", nil},
		{c, "GET", "/api/billing/status", nil}, {c, "GET", "/api/billing/nope", nil}, {c, "POST", "/api/contacts/import", []byte("x")},
		{c, "GET", "/openapi.json/x", nil}, {c, "GET", "/api/", nil}, {c, "GET", "/api", nil}, {c, "GET", "/", nil},
		{c, "PUT", "/api/contacts/00000000-0000-0000-0000-000000000000", map[string]any{"firstName": "a"}},
		{c, "DELETE", "/api/contacts/00000000-0000-0000-0000-000000000000", nil},
	}
	for range 60 { // past the burst: 429s
		probes = append(probes, probe{c, "GET", "/api/contacts", nil})
	}
	seen, statuses := map[string]bool{}, map[int]bool{}
	for _, p := range probes {
		res := p.c.doWith(p.method, p.path, p.body, nil)
		statuses[res.Status] = true
		if res.Status < 400 {
			continue
		}
		what := fmt.Sprintf("%s %s -> %d: %.200s", p.method, p.path, res.Status, res.Body)
		var got struct {
			Error map[string]any `json:"error"`
		}
		if seen[what] {
			continue
		}
		seen[what] = true
		if err := jsonUnmarshal(res.Body, &got); !assert.NoError(t, err, what) || !assert.NotNil(t, got.Error, what) {
			continue
		}
		id := res.Header.Get("X-Request-Id")
		assert.NotEmpty(t, id, what)
		assert.Equal(t, id, got.Error["requestId"], what)
	}
	for _, code := range []int{400, 401, 403, 404, 405, 429} {
		assert.True(t, statuses[code], "some probe answered %d", code)
	}
}
