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
