package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A member of org A who sends org B's ids gets exactly what a missing id gets, on every
// contacts and segments route, and never a byte of B's data.
func TestAnotherOrgsIDsAnswerAsMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	a := e.newMember("admin")
	b := e.newMember("admin")

	secret := map[string]any{"phone": "2025550199", "firstName": "Bsecret", "email": "b-secret@example.com", "tags": []string{"b-only"}}
	res := b.do("POST", "/api/contacts", secret)
	require.Equal(t, 201, res.Status)
	bContact := res.JSON(t)["id"].(string)
	res = b.do("POST", "/api/segments", map[string]any{"name": "B segment", "filter": map[string]any{"tags": []string{"b-only"}}})
	require.Equal(t, 201, res.Status, "%s", res.Body)
	bSegment := res.JSON(t)["id"].(string)
	missing := "0190d1f8-0000-7000-8000-00000000dead"

	routes := []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/contacts/%s", nil},
		{"PUT", "/api/contacts/%s", map[string]any{"firstName": "hijack"}},
		{"DELETE", "/api/contacts/%s", nil},
		{"GET", "/api/segments/%s", nil},
		{"PUT", "/api/segments/%s", map[string]any{"name": "hijack"}},
		{"DELETE", "/api/segments/%s", nil},
		{"GET", "/api/contacts?segmentId=%s", nil},
	}
	for _, r := range routes {
		asMissing := a.do(r.method, strings.Replace(r.path, "%s", missing, 1), r.body)
		foreign := a.do(r.method, strings.Replace(r.path, "%s", bContact, 1), r.body)
		if strings.Contains(r.path, "segment") {
			foreign = a.do(r.method, strings.Replace(r.path, "%s", bSegment, 1), r.body)
		}
		assert.Equal(t, http.StatusNotFound, foreign.Status, "%s %s", r.method, r.path)
		assert.Equal(t, asMissing.Status, foreign.Status, "%s %s", r.method, r.path)
		assert.Equal(t, asMissing.ErrCode(t), foreign.ErrCode(t), "%s %s", r.method, r.path)
		assert.NotContains(t, string(foreign.Body), "Bsecret")
	}

	// Lists, searches and merges in A never see B's contact.
	for _, q := range []string{"", "?search=Bsecret", "?tags=b-only", "?search=2025550199"} {
		res := a.do("GET", "/api/contacts"+q, nil)
		require.Equal(t, 200, res.Status)
		assert.NotContains(t, string(res.Body), "Bsecret", q)
		assert.NotContains(t, string(res.Body), bContact, q)
	}
	res = a.do("GET", "/api/segments", nil)
	assert.NotContains(t, string(res.Body), bSegment)
	res = a.do("POST", "/api/contacts", map[string]any{"phone": "2025550199"})
	assert.Equal(t, 201, res.Status, "the same phone in A is a new contact, not a merge into B's")
	assert.NotEqual(t, bContact, res.JSON(t)["id"])

	// B's data is intact after A's attempts.
	got := b.do("GET", "/api/contacts/"+bContact, nil).JSON(t)
	assert.Equal(t, "Bsecret", got["firstName"])
	assert.Equal(t, 200, b.do("GET", "/api/segments/"+bSegment, nil).Status)

	// A member of A naming B in the header is refused before any data is read.
	cross := &client{e: e, token: a.token, org: b.org}
	res = cross.do("GET", "/api/contacts", nil)
	assert.Equal(t, http.StatusForbidden, res.Status)
	assert.Equal(t, "FORBIDDEN", res.ErrCode(t))
}
