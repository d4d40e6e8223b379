package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/tenant"
)

func TestOrganizationHeaderAndMembership(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("reader", "read")
	e.member("stranger", "admin") // a member elsewhere only
	cases := []struct {
		name, user, org, method string
	}{
		{"missing header", "reader", "", http.MethodGet},
		{"not a UUID", "reader", "acme", http.MethodGet},
		{"UUID without hyphens", "reader", strings.ReplaceAll(org, "-", ""), http.MethodGet},
		{"not a member", "stranger", org, http.MethodGet},
		{"unknown organization", "reader", "0190d1f8-0000-7000-8000-00000000dead", http.MethodGet},
		{"read-only member writing", "reader", org, http.MethodPost},
		{"read-only member deleting", "reader", org, http.MethodDelete},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "/api/contacts"
			if tc.method == http.MethodDelete {
				path += "/0190d1f8-0000-7000-8000-000000000001"
			}
			res := e.do(request{method: tc.method, path: path, token: e.token(tc.user), org: tc.org, body: strings.NewReader(`{"firstName":"x"}`)})
			assert.Equal(t, http.StatusForbidden, res.status, "%s", res.body)
			assert.Equal(t, "FORBIDDEN", res.apiErr(t)["code"])
		})
	}
	_, calls := e.contacts.lastCall()
	assert.Zero(t, calls, "no request reached the service")

	res := e.get("/api/contacts", "reader", strings.ToUpper(org))
	require.Equal(t, http.StatusOK, res.status, "a member may read: %s", res.body)
	md, _ := e.contacts.lastCall()
	p := principal(t, md)
	assert.Equal(t, org, p.OrgID.String())
	assert.Equal(t, "reader", p.User)
	assert.Equal(t, tenant.AccessRead, p.Access)
	assert.Equal(t, res.header.Get("X-Request-Id"), p.RequestID)
}

func TestWriteAccessIsForwarded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("writer", "write")
	res := e.do(request{method: http.MethodPost, path: "/api/contacts", token: e.token("writer"), org: org, body: strings.NewReader(`{"firstName":"Ada"}`)})
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	md, _ := e.contacts.lastCall()
	assert.Equal(t, tenant.AccessWrite, principal(t, md).Access)
}

func TestClientCannotForgeForwardedMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("reader", "read")
	other := e.member("someone-else", "admin")
	h := http.Header{
		"Grpc-Metadata-X-Chorus-Org":    {other},
		"Grpc-Metadata-X-Chorus-Access": {"admin"},
		"X-Chorus-Org":                  {other},
		"X-Chorus-Access":               {"admin"},
	}
	res := e.do(request{method: http.MethodGet, path: "/api/contacts", token: e.token("reader"), org: org, header: h})
	require.Equal(t, http.StatusOK, res.status)
	md, _ := e.contacts.lastCall()
	assert.Equal(t, []string{org}, md.Get(tenant.MDOrg))
	assert.Equal(t, []string{"read"}, md.Get(tenant.MDAccess))
}

func TestOrgsServiceDownAnswers503(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *gateway.Config) { c.Peers[registry.Orgs.Name] = servetest.ClosedAddr(t) })
	res := e.get("/api/contacts", "user-1", "0190d1f8-0000-7000-8000-000000000001")
	assert.Equal(t, http.StatusServiceUnavailable, res.status)
	body := res.apiErr(t)
	assert.Equal(t, "UNAVAILABLE", body["code"])
	assert.NotContains(t, body["message"], "127.0.0.1", "no internal address leaks")
}
