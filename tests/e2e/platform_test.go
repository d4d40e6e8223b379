package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/gateway/openapi"
)

func TestAuthAndOrganizationHeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reader := e.newMember("read")

	anon := &client{e: e, org: reader.org}
	res := anon.do("GET", "/api/contacts", nil)
	assert.Equal(t, http.StatusUnauthorized, res.Status)
	assert.Equal(t, "UNAUTHENTICATED", res.ErrCode(t))
	assert.Contains(t, res.Header.Get("WWW-Authenticate"), "Bearer")

	forged := &client{e: e, org: reader.org, token: reader.token[:len(reader.token)-4] + "AAAA"}
	res = forged.do("GET", "/api/contacts", nil)
	assert.Equal(t, http.StatusUnauthorized, res.Status)
	assert.Contains(t, res.Header.Get("WWW-Authenticate"), `error="invalid_token"`)

	expiredTok, err := e.st.Key.Sign("someone", -time.Hour)
	require.NoError(t, err)
	res = (&client{e: e, org: reader.org, token: expiredTok}).do("GET", "/api/contacts", nil)
	assert.Equal(t, http.StatusUnauthorized, res.Status)

	for name, org := range map[string]string{"missing": "", "not a UUID": "acme", "not a member": "0190d1f8-0000-7000-8000-000000000001"} {
		res := (&client{e: e, token: reader.token, org: org}).do("GET", "/api/contacts", nil)
		assert.Equal(t, http.StatusForbidden, res.Status, name)
		assert.Equal(t, "FORBIDDEN", res.ErrCode(t), name)
	}

	assert.Equal(t, 200, reader.do("GET", "/api/contacts", nil).Status)
	for _, r := range []struct{ method, path string }{{"POST", "/api/contacts"}, {"PUT", "/api/contacts/0190d1f8-0000-7000-8000-000000000001"}, {"DELETE", "/api/contacts/0190d1f8-0000-7000-8000-000000000001"}} {
		res := reader.do(r.method, r.path, map[string]any{"firstName": "x"})
		assert.Equal(t, http.StatusForbidden, res.Status, "read access cannot %s", r.method)
		assert.Equal(t, "FORBIDDEN", res.ErrCode(t))
	}
	assert.Empty(t, reader.do("GET", "/api/contacts", nil).JSON(t)["contacts"], "nothing was written")
}

func TestErrorBodiesAndLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.newMember("write")

	res := c.doWith("GET", "/api/nothing-here", nil, http.Header{"X-Request-Id": {"req-abc-123"}})
	assert.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, "NOT_FOUND", res.ErrCode(t))
	assert.Equal(t, "req-abc-123", res.Header.Get("X-Request-Id"))
	assert.Equal(t, "req-abc-123", res.JSON(t)["error"].(map[string]any)["requestId"])
	res = c.do("GET", "/nowhere", nil)
	assert.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, "NOT_FOUND", res.ErrCode(t))

	big := bytes.Repeat([]byte("x"), 1<<20+1)
	res = c.do("POST", "/api/contacts", []byte(`{"firstName":"`+string(big)+`"}`))
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.Status)
	assert.Equal(t, "PAYLOAD_TOO_LARGE", res.ErrCode(t))

	// Success codes come from the service; the internal header never reaches the client.
	res = c.do("POST", "/api/contacts", map[string]any{"firstName": "Hdr"})
	assert.Equal(t, http.StatusCreated, res.Status)
	for k := range res.Header {
		assert.NotContains(t, strings.ToLower(k), "x-http-code")
		assert.NotContains(t, strings.ToLower(k), "grpc-metadata")
	}
	assert.NotEmpty(t, res.Header.Get("X-Request-Id"))
}

func TestRateLimitPerOrganizationAndUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"CHORUS_RATE_LIMIT": "1", "CHORUS_RATE_BURST": "3"})
	c := e.newMember("read")
	other := e.newMember("read")
	var limited response
	for range 10 {
		res := c.do("GET", "/api/contacts", nil)
		if res.Status == http.StatusTooManyRequests {
			limited = res
			break
		}
		require.Equal(t, 200, res.Status)
		assert.Equal(t, "3", res.Header.Get("RateLimit-Limit"))
	}
	require.Equal(t, http.StatusTooManyRequests, limited.Status, "the burst runs out")
	assert.Equal(t, "RATE_LIMITED", limited.ErrCode(t))
	retry, err := strconv.Atoi(limited.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds")
	assert.GreaterOrEqual(t, retry, 1)
	assert.Equal(t, "0", limited.Header.Get("RateLimit-Remaining"))
	assert.Equal(t, 200, other.do("GET", "/api/contacts", nil).Status, "another org and user have their own budget")
}

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	get := func(path string) (int, []byte) {
		res, err := e.http.Get(e.st.HTTPURL + path)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	code, _ := get("/healthz")
	assert.Equal(t, 200, code)
	code, body := get("/readyz")
	assert.Equal(t, 200, code, "%s", body)
	code, body = get("/openapi.json")
	require.Equal(t, 200, code)
	assert.Equal(t, string(openapi.Spec), string(body), "the validated contract is the served document")
	var doc map[string]any
	require.NoError(t, json.Unmarshal(body, &doc))
	assert.Contains(t, doc["paths"], "/api/contacts")
	assert.Contains(t, doc["paths"], "/api/segments/{id}")
	e.newMember("read").do("GET", "/api/contacts", nil)
	code, body = get("/metrics")
	assert.Equal(t, 200, code)
	assert.Contains(t, string(body), "/api/contacts")
}
