package twilio

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ServeList filters by To and From, lists newest first and pages through next_page_uri until
// the last page, which names none.
func TestServeListFiltersAndPages(t *testing.T) {
	var all []Message
	for i := range 5 {
		all = append(all, Message{SID: fmt.Sprint("SM", i), From: "+14155550100", To: "+14155550123"})
	}
	all = append(all, Message{SID: "SMother", From: "+14155550100", To: "+14155550999"})

	var sids []string
	next := "/2010-04-01/Accounts/AC1/Messages.json?To=%2B14155550123&From=%2B14155550100&PageSize=2"
	for pages := 0; next != ""; pages++ {
		require.Less(t, pages, 5, "the pages end")
		w := httptest.NewRecorder()
		ServeList(w, httptest.NewRequest("GET", next, nil), all)
		var p Page
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
		require.LessOrEqual(t, len(p.Messages), 2)
		for _, m := range p.Messages {
			sids = append(sids, m.SID)
		}
		next = p.NextPageURI
	}
	assert.Equal(t, []string{"SM4", "SM3", "SM2", "SM1", "SM0"}, sids)
}
