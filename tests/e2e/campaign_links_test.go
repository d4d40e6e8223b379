package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A campaign's URLs become the organization's short links, one code per distinct URL for the
// whole campaign; the texts are priced with the links in them; following a link redirects to
// the original URL and counts one click for the campaign; a test copy shows a short link of
// its own whose clicks count for no campaign.
func TestCampaignShortLinksCountClicks(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550230", 100)
	var phones []string
	for i := range 4 {
		phones = append(phones, fmt.Sprintf("+1202555%04d", 2100+i))
	}
	tn.contacts("links", phones)

	// The booking URL alone is over 480 characters: typed out, every text would cost 2 credits.
	menu, book := "https://example.com/menu?day=tue", "https://example.com/book?ref="+strings.Repeat("a", 470)
	message := "Hi {{firstName}}: menu " + menu + ", book at " + book + " or see the menu again (" + menu + ")."
	id := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Links", "message": message, "contactFilter": map[string]any{"tags": []string{"links"}}, "timezone": zoneWhere(12),
	}), http.StatusCreated).str("id")

	// A test copy before the send: shortened as recipients will see it, under its own link.
	const tester = "+12025556101"
	res := tn.do("POST", "/api/campaigns/"+id+"/test-send", map[string]any{"recipients": []string{tester}, "mergePreviewData": map[string]any{"firstName": "Tess"}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)

	tn.awaitStatus(id, "completed", 60*time.Second)
	text := regexp.MustCompile(`^Hi Ada\d: menu (http://\S+/l/([0-9A-Za-z]{8})), book at (http://\S+/l/([0-9A-Za-z]{8})) or see the menu again \((http://\S+/l/([0-9A-Za-z]{8}))\)\.$`)
	codes := map[string]string{}
	for _, p := range phones {
		thread := tn.thread(p)
		require.Len(t, thread, 1, p)
		m := text.FindStringSubmatch(thread[0]["message"].(string))
		require.NotNil(t, m, "short links in %q", thread[0]["message"])
		assert.Equal(t, m[2], m[6], "a repeated URL is one link")
		codes[m[2]], codes[m[4]] = m[1], m[3]
	}
	require.Len(t, codes, 2, "one code per distinct URL for the whole campaign: %v", codes)
	eventually(t, 30*time.Second, "the hold settled", func() bool { return tn.balance() == 100-4 })

	var testLink string
	eventually(t, 15*time.Second, "the test copy", func() bool {
		th := tn.thread(tester)
		if len(th) != 1 {
			return false
		}
		m := text.FindStringSubmatch(strings.Replace(th[0]["message"].(string), "Tess", "Ada0", 1))
		if m == nil {
			return false
		}
		testLink = m[1]
		return true
	})
	_, campaignCode := codes[testLink[len(testLink)-8:]]
	assert.False(t, campaignCode, "a test copy's link is not the campaign's")

	follow := func(link string) string {
		t.Helper()
		hit, err := e.noFollow().Get(link)
		require.NoError(t, err)
		hit.Body.Close()
		require.Equal(t, http.StatusFound, hit.StatusCode)
		return hit.Header.Get("Location")
	}
	assert.Equal(t, menu, follow(testLink))
	targets := map[string]string{}
	for _, link := range codes {
		targets[follow(link)] = link
	}
	require.Contains(t, targets, menu)
	require.Contains(t, targets, book)
	assert.Equal(t, menu, follow(targets[menu]))
	assert.Equal(t, menu, follow(targets[menu]))
	// Four campaign clicks in all (the menu's link three times, the booking's once); the test
	// copy's click is nobody's.
	clicks := func() float64 { return tn.getCampaign(id)["displayMetrics"].(map[string]any)["clickCount"].(float64) }
	eventually(t, 30*time.Second, "4 clicks counted", func() bool { return clicks() == 4 })
	time.Sleep(time.Second)
	assert.EqualValues(t, 4, clicks(), "each click counted once, the test copy's not at all")
}
