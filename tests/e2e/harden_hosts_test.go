package e2e

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"strings"
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

// The campaigns export guards a name that starts a formula behind an invisible character or
// in a fullwidth form, not only behind a plain =, +, - or @.
func TestExportGuardsDisguisedFormulas(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125559702", 100)
	names := []string{
		"Plain", "=SUM(A1)", "\uFF1DSUM(A1)", "\uFF0B1", "\uFF20sum", "\u2212" + "1",
		"\u200B=SUM(A1)", "\uFEFF=SUM(A1)", "\u202E=SUM(A1)", "Spring\u200B=1",
	}
	for _, n := range names {
		campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": n}), http.StatusCreated)
	}
	zone, err := time.LoadLocation("America/Chicago")
	require.NoError(t, err)
	today := time.Now().In(zone)
	span := "startDate=" + today.AddDate(0, 0, -1).Format(time.DateOnly) + "&endDate=" + today.AddDate(0, 0, 1).Format(time.DateOnly)
	var got map[string]bool
	eventually(t, 30*time.Second, "every draft in the export", func() bool {
		res := tn.analytics("export?type=campaigns&" + span)
		rows, err := csv.NewReader(strings.NewReader(string(res.Body))).ReadAll()
		require.NoError(t, err)
		got = map[string]bool{}
		for _, r := range rows[1:] {
			got[r[0]] = true
		}
		return len(got) == len(names)
	})
	for _, n := range names {
		want := "'" + n
		if n == "Plain" || n == "Spring\u200B=1" {
			want = n
		}
		assert.True(t, got[want], "%q exported as %q; got %q", n, want, got)
	}
}

// Media URLs are refused alike on every path that takes one (campaign mediaUrl, test sends'
// mediaUrls, polls' introMediaUrl, replies' mediaUrl) when their host, read as a resolver
// reads it, is not public, or when they hold a space: 400 VALIDATION_FAILED naming the field.
func TestMediaURLsWithLocalHostsAreRefusedEverywhere(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125559703", 100)
	contact := "+12025559711"
	tn.contact(contact, "Ada", true)
	draft := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "Media", "message": "Hi"}), http.StatusCreated)
	good := "HTTPS://CDN.Example.COM./a.png"
	campaignOf(t, tn.do("PUT", "/api/campaigns/"+draft.str("id")+"/draft", map[string]any{"mediaUrl": good}), http.StatusOK)

	refuse := func(what string, res response, field string) {
		t.Helper()
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", what, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), what)
		assert.Contains(t, res.ErrFields(t), field, what)
	}
	for _, bad := range []string{
		"HTTP://LOCALHOST./a", "http://127.1/a", "http://2130706433/a", "http://0x7f.1/a", "http://100.64.0.1/a",
		"http://metadata.google.internal/a", "http://[::ffff:169.254.169.254]/a", "http://[fd00::1]/a",
		"https://example.com/a b.png", "https://example.com/a\u200b.png",
	} {
		body := map[string]any{"name": "Media", "message": "Hi", "mediaUrl": bad}
		refuse("campaign draft "+bad, tn.do("POST", "/api/campaigns/draft", body), "mediaUrl")
		refuse("campaign update "+bad, tn.do("PUT", "/api/campaigns/"+draft.str("id")+"/draft", map[string]any{"mediaUrl": bad}), "mediaUrl")
		refuse("test send "+bad, tn.do("POST", "/api/campaigns/"+draft.str("id")+"/test-send",
			map[string]any{"recipients": []string{contact}, "mediaUrls": []string{good, bad}}), "mediaUrls[1]")
		poll := pollBody("Media")
		poll["introMediaUrl"] = bad
		refuse("poll "+bad, tn.do("POST", "/api/polls", poll), "introMediaUrl")
		refuse("reply "+bad, tn.do("POST", "/api/conversations/"+url.PathEscape(contact)+"/reply",
			map[string]any{"message": "hi", "mediaUrl": bad}), "mediaUrl")
	}
	assert.Empty(t, tn.outgoing(contact), "no refused call sent anything")
}
