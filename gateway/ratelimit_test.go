package gateway_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/servetest"
)

func TestRateLimitPerOrganizationAndUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *gateway.Config) { c.RateLimit, c.RateBurst = 1, 3 })
	org := e.member("alice", "read")
	e.grant(org, "bob", "read")

	for want := 2; want >= 0; want-- {
		res := e.get("/api/contacts", "alice", org)
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		assert.Equal(t, "3", res.header.Get("RateLimit-Limit"))
		assert.Equal(t, strconv.Itoa(want), res.header.Get("RateLimit-Remaining"))
	}
	res := e.get("/api/contacts", "alice", org)
	require.Equal(t, http.StatusTooManyRequests, res.status, "%s", res.body)
	assert.Equal(t, "RATE_LIMITED", res.apiErr(t)["code"])
	assert.NotEmpty(t, res.apiErr(t)["requestId"])
	retry, err := strconv.Atoi(res.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds: %q", res.header.Get("Retry-After"))
	assert.GreaterOrEqual(t, retry, 1)
	assert.Equal(t, "3", res.header.Get("RateLimit-Limit"))
	assert.Equal(t, "0", res.header.Get("RateLimit-Remaining"))
	// A read's decision is taken while it runs: the first refused read may have reached the
	// service (its answer is replaced by the 429), but once refused, the caller's requests
	// wait for their decision and reach nothing until Retry-After has passed.
	_, before := e.contacts.lastCall()
	assert.LessOrEqual(t, before, 4)
	res = e.get("/api/contacts", "alice", org)
	require.Equal(t, http.StatusTooManyRequests, res.status, "%s", res.body)
	res = e.do(request{method: http.MethodPost, path: "/api/contacts", token: e.token("alice"), org: org,
		body: strings.NewReader(`{"phone":"+12025550143"}`)})
	require.Equal(t, http.StatusTooManyRequests, res.status, "%s", res.body)
	_, after := e.contacts.lastCall()
	assert.Equal(t, before, after, "refused requests after the first did not reach the service")
	time.Sleep(time.Duration(retry) * time.Second)
	res = e.get("/api/contacts", "alice", org)
	assert.Equal(t, http.StatusOK, res.status, "served again once Retry-After has passed: %s", res.body)

	res = e.get("/api/contacts", "bob", org)
	assert.Equal(t, http.StatusOK, res.status, "another user of the same organization has their own budget")
	other := e.member("alice", "read")
	res = e.get("/api/contacts", "alice", other)
	assert.Equal(t, http.StatusOK, res.status, "the same user in another organization has their own budget")
}

// Redis being unreachable must not take the API down: requests are served without a limit and
// the fail-open counter records it.
func TestRateLimiterFailsOpenWithoutRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *gateway.Config) {
		c.RedisURL = "redis://" + servetest.ClosedAddr(t) + "/0"
		c.RateLimit, c.RateBurst = 1, 1
	})
	org := e.member("alice", "read")
	for range 3 {
		res := e.get("/api/contacts", "alice", org)
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		assert.Empty(t, res.header.Get("RateLimit-Remaining"), "no decision, no budget headers")
	}
	metrics := e.do(request{method: http.MethodGet, path: "/metrics"})
	assert.Contains(t, string(metrics.body), "chorus_gateway_ratelimit_fail_open_total 3")
	assert.Equal(t, 1, strings.Count(e.logs.String(), "fail open"), "the outage is logged once, not per request")
}
