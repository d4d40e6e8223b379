package e2e

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A search's % and _ are the characters themselves, not LIKE wildcards: in the poll
// participants list (where "%" once listed everyone) and in the contacts list.
func TestSearchWildcardsAreLiteral(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125559701", 100)
	plain, pct, under, slash := "+12025559701", "+12025559702", "+12025559703", "+12025559704"
	for phone, name := range map[string]string{plain: "Ann", pct: "Bo%b", under: "Cy_x", slash: `De\e`} {
		res := tn.do("POST", "/api/contacts", map[string]any{"phone": phone, "firstName": name, "tags": []string{"like"}, "timezone": zoneWhere(12)})
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	}
	contacts := func(search string) []string {
		res := tn.do("GET", "/api/contacts?search="+url.QueryEscape(search), nil)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		var out []string
		for _, c := range res.JSON(t)["contacts"].([]any) {
			out = append(out, c.(map[string]any)["phone"].(string))
		}
		return out
	}
	assert.Equal(t, []string{pct}, contacts("%"))
	assert.Equal(t, []string{under}, contacts("_"))
	assert.Equal(t, []string{slash}, contacts(`\`))

	eventually(t, 60*time.Second, "phone lookups", func() bool {
		res := tn.do("GET", "/api/contacts?tags=like&isTextable=true&includeTotal=true&limit=1", nil)
		return res.JSON(t)["total"] == float64(4)
	})
	id := tn.createPoll(pollBody("Wildcards"))["id"].(string)
	tn.startPoll(id, "like")
	eventually(t, 30*time.Second, "four participants", func() bool {
		_, ps := tn.participants(id, "")
		return len(ps) == 4
	})
	for search, want := range map[string][]string{
		"%": {pct}, "_": {under}, `\`: {slash}, "%%": nil, "Bo%": {pct}, "9702": {pct}, "": {plain, pct, under, slash},
	} {
		_, ps := tn.participants(id, "?search="+url.QueryEscape(search))
		if want == nil {
			want = []string{}
		}
		assert.Equal(t, want, keys(ps), "search %q", search)
	}
}
