package gateway_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every 405 names the methods the path accepts, whichever layer answers it: the operational
// paths, the grpc-gateway routes (a method mismatch) and the public routes.
func TestMethodNotAllowedCarriesAllow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("writer", "write")
	cases := []struct{ method, path, allow string }{
		{http.MethodPost, "/healthz", "GET, HEAD"},
		{http.MethodDelete, "/openapi.json", "GET, HEAD"},
		{http.MethodDelete, "/api/contacts", "GET, POST"},
		{http.MethodPost, "/api/contacts/0190d1f8-0000-7000-8000-00000000abcd", "GET, PUT, DELETE"},
		{http.MethodHead, "/api/segments", "GET, POST"},
		{http.MethodGet, "/api/conversations/%2B12025550143/reply", "POST"},
		{http.MethodDelete, "/api/conversations/%2B12025550143", "PATCH"},
		{http.MethodGet, "/webhooks/sandbox/inbound", "POST"},
		{http.MethodPost, "/l/abcdefgh", "GET, HEAD"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			res := e.do(request{method: tc.method, path: tc.path, token: e.token("writer"), org: org})
			require.Equal(t, http.StatusMethodNotAllowed, res.status, "%s", res.body)
			assert.Equal(t, tc.allow, res.header.Get("Allow"))
			if tc.method != http.MethodHead {
				assert.Equal(t, "METHOD_NOT_ALLOWED", res.json(t)["error"].(map[string]any)["code"])
			}
		})
	}
}
