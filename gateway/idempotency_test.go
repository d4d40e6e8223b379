package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// post sends body to path as user in org with the Idempotency-Key values given.
func (e *env) post(path, user, org, body string, keys ...string) response {
	e.t.Helper()
	return e.do(request{method: http.MethodPost, path: path, token: e.token(user), org: org,
		body: strings.NewReader(body), header: http.Header{"Idempotency-Key": keys}})
}

// flushRedis empties the gateway's Redis database, as a restart without persistence would.
func (e *env) flushRedis() {
	e.t.Helper()
	opts, err := redis.ParseURL(e.cfg.RedisURL)
	require.NoError(e.t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	require.NoError(e.t, rdb.FlushDB(context.Background()).Err())
}

func TestIdempotencyKeyReplaysTheFirstAnswerToItsUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("ada", "write")
	e.grant(org, "bob", "write")

	first := e.post("/api/contacts", "ada", org, `{"firstName":"Ada"}`, "key-1")
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
	assert.Empty(t, first.header.Get("Idempotent-Replayed"))
	again := e.post("/api/contacts", "ada", org, `{"firstName":"Ada"}`, "key-1")
	assert.Equal(t, http.StatusCreated, again.status)
	assert.Equal(t, first.body, again.body, "replayed byte for byte")
	assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	assert.Equal(t, first.header.Get("Content-Type"), again.header.Get("Content-Type"))
	_, calls := e.contacts.lastCall()
	assert.Equal(t, 1, calls, "the replay did not reach the service")

	reused := e.post("/api/contacts", "ada", org, `{"firstName":"Eve"}`, "key-1")
	assert.Equal(t, http.StatusUnprocessableEntity, reused.status)
	assert.Equal(t, "IDEMPOTENCY_KEY_REUSED", reused.apiErr(t)["code"])

	// The key is the user's: another member's same key is another request.
	bob := e.post("/api/contacts", "bob", org, `{"firstName":"Ada"}`, "key-1")
	assert.Equal(t, http.StatusCreated, bob.status)
	assert.Empty(t, bob.header.Get("Idempotent-Replayed"))
	_, calls = e.contacts.lastCall()
	assert.Equal(t, 2, calls)
}

func TestIdempotencyKeyMustBePrintableASCII(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("ada", "write")
	for name, keys := range map[string][]string{
		"empty": {""}, "too long": {strings.Repeat("k", 256)}, "a tab": {"a\tb"}, "not ASCII": {"clé"}, "twice": {"a", "b"},
	} {
		res := e.post("/api/contacts", "ada", org, `{"firstName":"Ada"}`, keys...)
		assert.Equal(t, http.StatusBadRequest, res.status, name)
		assert.Equal(t, "VALIDATION_FAILED", res.apiErr(t)["code"], name)
		assert.Contains(t, res.apiErr(t)["fields"], "Idempotency-Key", name)
	}
	_, calls := e.contacts.lastCall()
	assert.Zero(t, calls)
	res := e.post("/api/contacts", "ada", org, `{"firstName":"Ada"}`, strings.Repeat("~", 255))
	assert.Equal(t, http.StatusCreated, res.status, "%s", res.body)
}

// A send's key is kept in PostgreSQL: emptying Redis does not let its retry send again. An
// answer the service failed (5xx) is not kept: the retry runs.
func TestIdempotencyKeyOfASendOutlivesRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("ada", "write")
	first := e.post("/api/conversations/12025550143/reply", "ada", org, `{"message":"hi"}`, "send-1")
	require.Equal(t, http.StatusOK, first.status, "%s", first.body)
	e.flushRedis()
	again := e.post("/api/conversations/12025550143/reply", "ada", org, `{"message":"hi"}`, "send-1")
	assert.Equal(t, http.StatusOK, again.status)
	assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	assert.Equal(t, first.body, again.body)
	reused := e.post("/api/conversations/12025550143/reply", "ada", org, `{"message":"hello"}`, "send-1")
	assert.Equal(t, http.StatusUnprocessableEntity, reused.status)
	calls, _ := e.messaging.calls()
	assert.Equal(t, 1, calls)

	e.messaging.fail("12025550199", status.Error(codes.Unavailable, "down"))
	for range 2 {
		res := e.post("/api/conversations/12025550199/reply", "ada", org, `{"message":"hi"}`, "send-2")
		assert.Equal(t, http.StatusServiceUnavailable, res.status)
		assert.Empty(t, res.header.Get("Idempotent-Replayed"))
	}
	calls, _ = e.messaging.calls()
	assert.Equal(t, 3, calls, "each retry of a failed send ran")
}
