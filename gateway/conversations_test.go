package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConversationPathsReachTheServiceDecodedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("writer", "write")
	cases := []struct{ path, phone string }{
		{"/api/conversations/%2B12025550143/messages", "+12025550143"},
		{"/api/conversations/(202)%20555-0143/messages", "(202) 555-0143"},
		{"/api/conversations/+12025550143/messages", "+12025550143"}, // a + in a path is a plus, not a space
		{"/api/conversations/2025550143/messages?limit=5", "2025550143"},
		{"/api/conversations/%252B1202/messages", "%2B1202"}, // decoded once, not twice
		{"/api/conversations/202%2F555/messages", "202/555"}, // an escaped slash stays in the parameter
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			res := e.get(tc.path, "writer", org)
			require.Equal(t, http.StatusOK, res.status, "%s", res.body)
			assert.Equal(t, tc.phone, e.messaging.lastPhone())
			assert.Equal(t, "America/New_York", res.json(t)["timezone"])
			_, md := e.messaging.calls()
			assert.Equal(t, org, principal(t, md).OrgID.String(), "the principal travels like on every /api route")
		})
	}

	res := e.do(request{method: http.MethodPatch, path: "/api/conversations/%2B12025550143", token: e.token("writer"), org: org,
		body: strings.NewReader(`{"isStarred":true}`)})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	assert.Equal(t, map[string]any{
		"phoneNumber": "+12025550143", "isStarred": true, "isArchived": false, "contactId": "", "firstName": "",
		"lastName": "", "lastMessage": "", "lastMessageAt": nil, "unreadCount": float64(0),
	}, res.json(t), "response_body: the conversation itself")
	assert.Equal(t, "+12025550143", e.messaging.lastPhone())
}

func TestContactPathsStillMatchWithEscapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("reader", "read")
	res := e.get("/api/contacts/0190d1f8-0000-7000-8000-00000000%61bcd", "reader", org)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	assert.Equal(t, "0190d1f8-0000-7000-8000-00000000abcd", res.json(t)["id"])
}
