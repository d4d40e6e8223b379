package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bodies the campaign routes must answer with a 4xx, never a 500: no body at all, a draft
// promoted twice at once.
func TestCampaignEdgeBodies(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550220", 100)

	// An empty body is an input with no field: the usual 400 naming name.
	for _, body := range []any{nil, []byte{}} {
		for _, path := range []string{"/api/campaigns/draft", "/api/campaigns"} {
			res := tn.do("POST", path, body)
			require.Equal(t, http.StatusBadRequest, res.Status, "POST %s with %#v: %s", path, body, res.Body)
			assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
			assert.Contains(t, res.ErrFields(t), "name", path)
		}
	}
	id := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "Kept"}), http.StatusCreated).str("id")
	for _, body := range []any{nil, []byte{}} {
		d := campaignOf(t, tn.do("PUT", "/api/campaigns/"+id+"/draft", body), http.StatusOK)
		assert.Equal(t, "Kept", d.str("name"), "nothing sent, nothing changed")
	}

	// forceRoute MMS without mediaUrl is a campaign like any other (sent as MMS: route_test.go).
	segID := segOf(t, tn)
	campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{"name": "M", "message": "Hi", "segmentId": segID, "forceRoute": "MMS", "timezone": zoneWhere(12)}), http.StatusCreated)
	campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "M", "forceRoute": "MMS"}), http.StatusCreated)

	// A draft submitted several times at once: one 201, every other answer 409 INVALID_STATE
	// (docs/api-notes.md's and the overlay's code), whichever check refused it.
	for round := range 3 {
		d := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": fmt.Sprint("Twice ", round), "message": "Hi", "segmentId": segID}), http.StatusCreated)
		at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		var wg sync.WaitGroup
		codes := make([]int, 6)
		errs := make([]string, 6)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := tn.do("POST", "/api/campaigns", map[string]any{"draftId": d.str("id"), "scheduledFor": at})
				codes[i] = res.Status
				if res.Status != http.StatusCreated {
					errs[i] = res.ErrCode(t)
				}
			}()
		}
		wg.Wait()
		created := 0
		for i, c := range codes {
			if c == http.StatusCreated {
				created++
				continue
			}
			assert.Equal(t, http.StatusConflict, c, "answer %d: %s", i, errs[i])
		}
		assert.Equal(t, 1, created, "%v", codes)
	}
}

// Pauses and resumes sent at once end consistent: a campaign that shows paused sends nothing,
// and one that shows running is not held by messaging (it completes).
func TestCampaignConcurrentPausesAndResumesStayConsistent(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, map[string]string{"CHORUS_NUMBER_RATE": "2"})
	tn := e.newTenant("+13125550230", 100)
	var phones []string
	for i := range 14 {
		phones = append(phones, fmt.Sprintf("+1202555%04d", 5000+i))
	}
	tn.contacts("cc", phones)
	id := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "C", "message": "Hi {{firstName}}", "contactFilter": map[string]any{"tags": []string{"cc"}}, "timezone": zoneWhere(12),
	}), http.StatusCreated).str("id")
	tn.awaitStatus(id, "sending", 30*time.Second)

	all := func(verb string) []int {
		var wg sync.WaitGroup
		out := make([]int, 6)
		for i := range out {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i] = tn.do("POST", "/api/campaigns/"+id+"/"+verb, nil).Status
			}()
		}
		wg.Wait()
		return out
	}
	for round := range 2 {
		assert.Contains(t, all("pause"), http.StatusOK)
		require.Equal(t, "paused", tn.getCampaign(id).str("status"))
		time.Sleep(time.Second) // what was in flight settles
		atPause := tn.sentSoFar(phones)
		require.Less(t, atPause, len(phones), "round %d: paused before the end", round)
		time.Sleep(2 * time.Second)
		assert.Equal(t, atPause, tn.sentSoFar(phones), "round %d: a paused campaign sends nothing", round)

		assert.Contains(t, all("resume"), http.StatusOK)
		require.Equal(t, "sending", tn.getCampaign(id).str("status"))
		eventually(t, 10*time.Second, "sending again", func() bool { return tn.sentSoFar(phones) > atPause })
	}
	tn.awaitStatus(id, "completed", 60*time.Second)
	for _, ph := range phones {
		assert.Len(t, tn.thread(ph), 1, "exactly one message to %s", ph)
	}
}

// A recipient whose merged text is empty fails alone: the rest of the campaign goes out and it
// completes, with the hold settled.
func TestCampaignRecipientWithEmptyTextFailsAlone(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550240", 100)
	phones := []string{"+12025556001", "+12025556002", "+12025556003"}
	tn.contacts("empty", phones)
	res := tn.do("POST", "/api/contacts", map[string]any{"phone": "+12025556004", "tags": []string{"empty"}})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	eventually(t, 30*time.Second, "phone lookup", func() bool {
		res := tn.do("GET", "/api/contacts?tags=empty&isTextable=true&includeTotal=true&limit=1", nil)
		total, _ := res.JSON(t)["total"].(float64)
		return total == 4
	})

	id := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Names", "message": "{{firstName}}", "contactFilter": map[string]any{"tags": []string{"empty"}}, "timezone": zoneWhere(12),
	}), http.StatusCreated).str("id")
	done := tn.awaitStatus(id, "completed", 60*time.Second)
	assert.EqualValues(t, 4, done.num("totalCount"))
	assert.EqualValues(t, 1, done.num("failedCount"), "the contact without a first name")
	eventually(t, 30*time.Second, "sent counted", func() bool { return tn.getCampaign(id).num("sentCount") == 3 })
	assert.Empty(t, tn.thread("+12025556004"))
	eventually(t, 30*time.Second, "the hold settled", func() bool { return tn.balance() == 100-3 })
}
