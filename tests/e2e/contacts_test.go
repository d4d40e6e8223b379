package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A contact's life as a client lives it: create, merge, read, filter, update,
// delete, with the statuses and shapes of the spec.
func TestContactLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.newMember("write")

	res := c.do("POST", "/api/contacts", map[string]any{
		"phone": "(202) 555-0143", "firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
		"state": "ny", "tags": []string{"vip"}, "customFields": map[string]any{"team": "math"},
	})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	created := res.JSON(t)
	id, _ := created["id"].(string)
	assert.Equal(t, "created", created["_outcome"])
	assert.Equal(t, "+12025550143", created["phone"])
	assert.Equal(t, c.org, created["organizationId"])
	assert.Nil(t, created["isTextable"], "lookup pending: null")
	assert.Contains(t, created, "isTextable")
	assert.Equal(t, true, created["isOptedIn"])
	for _, absent := range []string{"customFields", "state", "address", "optedOutAt"} {
		assert.NotContains(t, created, absent, "the create response is the spec's subset")
	}

	// Same phone in another format: merged into the same contact, tags unioned, sent fields win.
	res = c.do("POST", "/api/contacts", map[string]any{"phone": "202.555.0143", "firstName": "Augusta", "tags": []string{"donor"}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	merged := res.JSON(t)
	assert.Equal(t, "merged", merged["_outcome"])
	assert.Equal(t, id, merged["id"])
	assert.Equal(t, "Augusta", merged["firstName"])
	assert.Equal(t, "Lovelace", merged["lastName"], "unsent fields keep their values")
	assert.ElementsMatch(t, []any{"vip", "donor"}, merged["tags"])

	// Merge by email, case-insensitively.
	res = c.do("POST", "/api/contacts", map[string]any{"email": "ADA@example.com", "city": "London"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, id, res.JSON(t)["id"])

	// The sandbox lookup marks the mobile number textable within about a second.
	eventually(t, 10*time.Second, "isTextable becomes true", func() bool {
		return c.do("GET", "/api/contacts/"+id, nil).JSON(t)["isTextable"] == true
	})
	full := c.do("GET", "/api/contacts/"+id, nil).JSON(t)
	assert.Equal(t, map[string]any{"team": "math"}, full["customFields"])
	assert.Equal(t, "NY", full["state"])
	assert.Equal(t, "London", full["city"])
	assert.Nil(t, full["optedOutAt"])

	// PUT: tags and customFields replace whole; unsent fields keep their values.
	res = c.do("PUT", "/api/contacts/"+id, map[string]any{"tags": []string{"alumni"}, "customFields": map[string]any{"year": 1843}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	full = c.do("GET", "/api/contacts/"+id, nil).JSON(t)
	assert.Equal(t, []any{"alumni"}, full["tags"])
	assert.Equal(t, map[string]any{"year": float64(1843)}, full["customFields"])
	assert.Equal(t, "Augusta", full["firstName"])

	res = c.do("DELETE", "/api/contacts/"+id, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, map[string]any{"id": id, "deleted": true}, res.JSON(t))
	res = c.do("GET", "/api/contacts/"+id, nil)
	assert.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, "NOT_FOUND", res.ErrCode(t))
	res = c.do("DELETE", "/api/contacts/"+id, nil)
	assert.Equal(t, http.StatusNotFound, res.Status, "deleting twice")
}

func TestCreateConflictsAndConcurrentMerges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.newMember("write")
	require.Equal(t, 201, c.do("POST", "/api/contacts", map[string]any{"phone": "2025550101"}).Status)
	phoneless := c.do("POST", "/api/contacts", map[string]any{"email": "b@example.com"})
	require.Equal(t, 201, phoneless.Status)
	assert.Equal(t, "", phoneless.JSON(t)["phone"], "a string field is \"\" when unset, never null")
	// Phone matches one contact, email the other: merging cannot resolve it.
	res := c.do("POST", "/api/contacts", map[string]any{"phone": "2025550101", "email": "b@example.com"})
	assert.Equal(t, http.StatusConflict, res.Status, "%s", res.Body)
	assert.Equal(t, "CONFLICT", res.ErrCode(t))

	// Ten clients create the same new number at once: one contact, one 201, nine merges.
	var wg sync.WaitGroup
	codes := make(chan int, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- c.do("POST", "/api/contacts", map[string]any{"phone": "+1 202 555 0177", "tags": []string{fmt.Sprint("t", i)}}).Status
		}()
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for code := range codes {
		count[code]++
	}
	assert.Equal(t, map[int]int{201: 1, 200: 9}, count)
	list := c.do("GET", "/api/contacts?search="+url.QueryEscape("202-555-0177"), nil).JSON(t)
	items := list["contacts"].([]any)
	require.Len(t, items, 1)
	assert.Len(t, items[0].(map[string]any)["tags"], 10, "every merge's tag kept")
}

func TestListFiltersAndPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.newMember("write")
	people := []map[string]any{
		{"phone": "2025550111", "firstName": "Jonathan", "lastName": "Smith", "email": "jon@example.com", "tags": []string{"a", "b"}, "state": "CA", "zip": "94110"},
		{"phone": "2025550112", "firstName": "Maria", "lastName": "Garcia", "tags": []string{"a"}, "state": "NY"},
		{"firstName": "Noam", "lastName": "Phoneless", "email": "noam@example.com", "tags": []string{"b"}, "state": "TX"},
		{"phone": "2025550002", "firstName": "Land", "lastName": "Line", "tags": []string{"c"}},
	}
	for _, p := range people {
		require.Equal(t, 201, c.do("POST", "/api/contacts", p).Status)
	}
	names := func(q string) []string {
		t.Helper()
		res := c.do("GET", "/api/contacts?"+q, nil)
		require.Equal(t, 200, res.Status, "%s: %s", q, res.Body)
		var out []string
		for _, it := range res.JSON(t)["contacts"].([]any) {
			m := it.(map[string]any)
			assert.NotContains(t, m, "customFields", "list items omit customFields")
			out = append(out, m["firstName"].(string))
		}
		return out
	}
	assert.ElementsMatch(t, []string{"Jonathan", "Maria", "Noam"}, names("tags=a,b"))
	assert.ElementsMatch(t, []string{"Jonathan"}, names("tags=a,b&tagsLogic=AND"))
	assert.ElementsMatch(t, []string{"Jonathan", "Noam"}, names("hasEmail=true"))
	assert.ElementsMatch(t, []string{"Noam"}, names("hasPhone=false"))
	assert.ElementsMatch(t, []string{"Jonathan", "Maria"}, names("state=ca,NY"))
	assert.ElementsMatch(t, []string{"Jonathan"}, names("zip=94110"))
	assert.ElementsMatch(t, []string{"Jonathan"}, names("search=Jonathon"), "fuzzy: a misspelt name")
	assert.ElementsMatch(t, []string{"Maria"}, names("search="+url.QueryEscape("(202) 555-0112")), "a phone in any format")
	assert.ElementsMatch(t, []string{"Jonathan", "Maria", "Noam", "Land"}, names("optedOut=false"))
	assert.Empty(t, names("optedOut=true"))
	eventually(t, 10*time.Second, "the landline lookup completes", func() bool {
		return len(names("isTextable=false")) == 1
	})
	assert.ElementsMatch(t, []string{"Land"}, names("isTextable=false"))

	// A segment is a saved filter; when given, ad-hoc filters are ignored.
	seg := c.do("POST", "/api/segments", map[string]any{"name": "A and B", "filter": map[string]any{"tags": []string{"a", "b"}, "tagsLogic": "AND"}})
	require.Equal(t, 201, seg.Status, "%s", seg.Body)
	segID := seg.JSON(t)["id"].(string)
	assert.ElementsMatch(t, []string{"Jonathan"}, names("segmentId="+segID+"&state=NY"))

	// Paging: every contact exactly once, by cursor, while rows are added between pages.
	for i := range 21 {
		require.Equal(t, 201, c.do("POST", "/api/contacts", map[string]any{"firstName": fmt.Sprintf("P%02d", i)}).Status)
	}
	seen := map[string]bool{}
	cursor := ""
	pages := 0
	for {
		q := "limit=10&sortBy=created_at&includeTotal=true"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		page := c.do("GET", "/api/contacts?"+q, nil).JSON(t)
		pages++
		assert.Equal(t, float64(10), page["limit"])
		assert.Equal(t, "created_at", page["sortBy"])
		if pages == 1 {
			assert.Equal(t, float64(25), page["total"])
			require.Equal(t, 201, c.do("POST", "/api/contacts", map[string]any{"firstName": "Late"}).Status)
		}
		for _, it := range page["contacts"].([]any) {
			id := it.(map[string]any)["id"].(string)
			assert.False(t, seen[id], "contact %s listed twice", id)
			seen[id] = true
		}
		if page["hasMore"] != true {
			assert.Equal(t, "", page["cursor"], "no cursor on the last page: a string, never null")
			break
		}
		cursor = page["cursor"].(string)
	}
	assert.Len(t, seen, 25, "the row created after page 1 sorts before the cursor and is not in later pages")
	assert.Equal(t, 3, pages)

	// Offset is the fallback: it skips rows in the same order, and a cursor wins over it.
	byOffset := c.do("GET", "/api/contacts?sortBy=created_at&limit=5&offset=10", nil).JSON(t)["contacts"].([]any)
	byPage := c.do("GET", "/api/contacts?sortBy=created_at&limit=15", nil).JSON(t)["contacts"].([]any)
	require.Len(t, byOffset, 5)
	assert.Equal(t, byPage[10:15], byOffset)
	first := c.do("GET", "/api/contacts?sortBy=created_at&limit=10", nil).JSON(t)
	withBoth := c.do("GET", "/api/contacts?sortBy=created_at&limit=5&offset=3&cursor="+url.QueryEscape(first["cursor"].(string)), nil).JSON(t)
	assert.Equal(t, byPage[10:15], withBoth["contacts"], "offset is ignored when a cursor is present")

	res := c.do("GET", "/api/contacts?cursor="+url.QueryEscape(cursor+"x"), nil)
	assert.Equal(t, 400, res.Status)
	assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
	assert.Contains(t, res.ErrFields(t), "cursor")
	res = c.do("GET", "/api/contacts?limit=201", nil)
	assert.Equal(t, 400, res.Status)
	assert.Contains(t, res.ErrFields(t), "limit")
	res = c.do("GET", "/api/contacts?limit=abc", nil)
	assert.Equal(t, 400, res.Status)
	assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
	res = c.do("GET", "/api/contacts?sortBy=name", nil)
	assert.Equal(t, 400, res.Status)
	assert.Contains(t, res.ErrFields(t), "sortBy")
}

func TestValidationNamesTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.newMember("write")
	tooMany := map[string]any{}
	for i := range 21 {
		tooMany[fmt.Sprintf("f%d", i)] = "x"
	}
	for field, body := range map[string]map[string]any{
		"phone":        {"phone": "12345"},
		"email":        {"email": "not an email"},
		"state":        {"state": "ZZ"},
		"customFields": {"customFields": tooMany},
		"timezone":     {"timezone": "Mars/Olympus"},
	} {
		res := c.do("POST", "/api/contacts", body)
		assert.Equal(t, 400, res.Status, field)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), field)
		assert.Contains(t, res.ErrFields(t), field, "%s: %s", field, res.Body)
	}
	res := c.do("POST", "/api/contacts", []byte(`{"firstName": "x"`))
	assert.Equal(t, 400, res.Status)
	assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
	res = c.do("POST", "/api/contacts", []byte(`{"fristName": "x"}`))
	assert.Equal(t, 400, res.Status, "unknown field: %s", res.Body)
	assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
	list := c.do("GET", "/api/contacts", nil).JSON(t)
	assert.Empty(t, list["contacts"], "nothing was stored by a rejected request")
}

// Input PostgreSQL or gRPC cannot carry is a 4xx naming the field, never a 500.
func TestUnstorableInputIsRejectedNotA500(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.newMember("write")
	for field, body := range map[string]string{
		"firstName":      `{"firstName":"a\u0000b"}`,
		"tags[1]":        `{"tags":["ok","a\u0000b"]}`, // named by its JSON path (issue 26)
		"customFields.k": `{"customFields":{"k":"a\u0000b"}}`,
		"phone":          `{"phone":"202-555-0143 ext. 12"}`,
	} {
		res := c.do("POST", "/api/contacts", []byte(body))
		assert.Equal(t, 400, res.Status, "%s: %s", field, res.Body)
		assert.Contains(t, res.ErrFields(t), field, "%s: %s", field, res.Body)
	}
	res := c.do("POST", "/api/segments", []byte(`{"name":"x\u0000"}`))
	assert.Equal(t, 400, res.Status, "%s", res.Body)
	assert.Contains(t, res.ErrFields(t), "name")
	for param, q := range map[string]string{"search": "search=ab%00cd", "tags": "tags=ab%00cd"} {
		res := c.do("GET", "/api/contacts?"+q, nil)
		assert.Equal(t, 400, res.Status, "%s: %s", q, res.Body)
		assert.Contains(t, res.ErrFields(t), param, q)
	}
	res = c.do("GET", "/api/contacts?search=%FF%FE", nil)
	assert.Equal(t, 400, res.Status, "%s", res.Body)
	assert.Contains(t, res.ErrFields(t), "search")
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		res := c.do(method, "/api/contacts/%FF", map[string]any{"firstName": "x"})
		assert.Equal(t, 404, res.Status, "%s: %s", method, res.Body)
		assert.Equal(t, "NOT_FOUND", res.ErrCode(t))
	}
	assert.Empty(t, c.do("GET", "/api/contacts", nil).JSON(t)["contacts"], "nothing was stored")
}

// The reported attack: merges of 50 new tags each through POST on one phone grew a contact to
// 150 tags, which PUT then refused to save. A merge past a limit is now refused whole.
func TestContactMergePastTheTagLimitIsRefused(t *testing.T) {
	e := newEnv(t, nil)
	c := e.newMember("write")
	batch := func(prefix string) []string {
		tags := make([]string, 50)
		for i := range tags {
			tags[i] = fmt.Sprint(prefix, i)
		}
		return tags
	}
	res := c.do("POST", "/api/contacts", map[string]any{"phone": "2025550190", "firstName": "Ada", "tags": batch("a")})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	id, _ := res.JSON(t)["id"].(string)
	for _, prefix := range []string{"b", "c"} {
		res = c.do("POST", "/api/contacts", map[string]any{"phone": "(202) 555-0190", "firstName": "Mallory", "tags": batch(prefix)})
		require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
		assert.Equal(t, map[string]any{"tags": "a contact has at most 50 tags; this merge would make 100"}, res.ErrFields(t))
	}
	full := c.do("GET", "/api/contacts/"+id, nil).JSON(t)
	assert.Len(t, full["tags"], 50)
	assert.Equal(t, "Ada", full["firstName"], "a refused merge changes nothing")
	res = c.do("PUT", "/api/contacts/"+id, map[string]any{"tags": full["tags"], "firstName": "Augusta"})
	assert.Equal(t, http.StatusOK, res.Status, "the contact can still be saved: %s", res.Body)
}

// A cursor is bound to the organization that listed it: in another organization it is refused
// as a forged one would be, never read as a position in that organization's list.
func TestContactCursorOfAnotherOrganizationIsRefused(t *testing.T) {
	e := newEnv(t, nil)
	a, b := e.newMember("write"), e.newMember("write")
	for _, c := range []*client{a, b} {
		for i := range 3 {
			require.Equal(t, http.StatusCreated, c.do("POST", "/api/contacts", map[string]any{"firstName": fmt.Sprint("p", i)}).Status)
		}
	}
	page := a.do("GET", "/api/contacts?limit=1", nil).JSON(t)
	cursor, _ := page["cursor"].(string)
	require.NotEmpty(t, cursor)
	res := a.do("GET", "/api/contacts?limit=1&cursor="+url.QueryEscape(cursor), nil)
	assert.Equal(t, http.StatusOK, res.Status, "the cursor pages its own organization: %s", res.Body)

	res = b.do("GET", "/api/contacts?limit=1&cursor="+url.QueryEscape(cursor), nil)
	assert.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
	assert.Contains(t, res.ErrFields(t), "cursor")
	res = a.do("GET", "/api/contacts?limit=1&sortBy=created_at&cursor="+url.QueryEscape(cursor), nil)
	assert.Equal(t, http.StatusBadRequest, res.Status, "a cursor of the other sort: %s", res.Body)
	assert.Contains(t, res.ErrFields(t), "cursor")
}
