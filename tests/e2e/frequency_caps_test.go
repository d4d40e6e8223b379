package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// settings reads GET /api/organization/settings.
func (tn *tenant) settings() map[string]any {
	t := tn.e.t
	t.Helper()
	res := tn.do("GET", "/api/organization/settings", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	return res.JSON(t)
}

// setFrequencyCap sets the organization's frequency cap over REST.
func (tn *tenant) setFrequencyCap(hours int) {
	t := tn.e.t
	t.Helper()
	res := tn.do("PATCH", "/api/organization/settings", map[string]any{"frequencyCapHours": hours})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, map[string]any{"frequencyCapHours": float64(hours), "stateQuietHours": true}, res.JSON(t))
}

// metric is one of the campaign detail's displayMetrics.
func (c campaign) metric(k string) any { return c["displayMetrics"].(map[string]any)[k] }

func TestOrganizationSettingsOverREST(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125553811", 10)
	other := e.newTenant("+13125553812", 10)
	assert.Equal(t, map[string]any{"frequencyCapHours": 0.0, "stateQuietHours": true}, tn.settings(), "off by default")
	tn.setFrequencyCap(24)
	res := tn.do("PATCH", "/api/organization/settings", map[string]any{})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, map[string]any{"frequencyCapHours": 24.0, "stateQuietHours": true}, res.JSON(t), "a field left out keeps its value")
	for _, bad := range []any{-1, 721, 1.5, true} {
		res := tn.do("PATCH", "/api/organization/settings", map[string]any{"frequencyCapHours": bad})
		assert.Equal(t, http.StatusBadRequest, res.Status, "%v: %s", bad, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), "%v", bad)
		assert.Contains(t, res.ErrFields(t), "frequencyCapHours", "%v", bad)
	}
	assert.Equal(t, map[string]any{"frequencyCapHours": 24.0, "stateQuietHours": true}, tn.settings())
	assert.Equal(t, map[string]any{"frequencyCapHours": 0.0, "stateQuietHours": true}, other.settings(), "another organization's setting")

	reader := e.as("reader-"+tn.org, tn.org)
	e.member(tn.org, "reader-"+tn.org, "read")
	assert.Equal(t, http.StatusOK, reader.do("GET", "/api/organization/settings", nil).Status)
	res = reader.do("PATCH", "/api/organization/settings", map[string]any{"frequencyCapHours": 1})
	assert.Equal(t, http.StatusForbidden, res.Status, "read access changes nothing: %s", res.Body)
}

// With a cap, a second campaign to the same list skips the recipients the first reached
// (counted as skipped, charged nothing) and still completes; a recipient the first did not
// reach gets the second. Without one, both campaigns reach everyone.
func TestFrequencyCapSkipsRecipientsOfARecentCampaign(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	capped := e.newTenant("+13125553821", 100)
	capped.setFrequencyCap(24)
	free := e.newTenant("+13125553822", 100)
	first, second := []string{"+12025553821", "+12025553822"}, "+12025553823"

	for _, tc := range []struct {
		tn          *tenant
		sent, skip  float64
		wantBalance float64
		texts       int // campaign messages each of the first recipients got
	}{
		{capped, 1, 2, 100 - 2 - 1, 1},
		{free, 3, 0, 100 - 2 - 3, 2},
	} {
		tn := tc.tn
		tn.contacts("fc", first)
		a := campaignTo(tn, "fc")
		done := tn.awaitStatus(a, "completed", 60*time.Second)
		assert.EqualValues(t, 2, done.num("sentCount"))
		assert.EqualValues(t, 0, done.metric("skipped"))
		tn.contacts("fc", []string{second})

		b := campaignTo(tn, "fc")
		done = tn.awaitStatus(b, "completed", 60*time.Second)
		assert.EqualValues(t, 3, done.num("totalCount"))
		assert.EqualValues(t, tc.sent, done.num("sentCount"))
		assert.EqualValues(t, 0, done.num("failedCount"), "a skipped recipient is no failure")
		assert.EqualValues(t, 0, done.num("queuedCount"))
		assert.EqualValues(t, tc.skip, done.metric("skipped"))
		assert.EqualValues(t, tc.sent, done.metric("sent"))
		for _, p := range first {
			assert.Len(t, tn.campaignTexts(p, "Hi "), tc.texts, "campaign messages to %s", p)
		}
		assert.Len(t, tn.campaignTexts(second, "Hi "), 1, "the new recipient got the second campaign")
		eventually(t, 30*time.Second, "the holds settled", func() bool { return tn.balance() == tc.wantBalance })
	}
}

// A settings change applies to the very next campaign: messaging, which caches the
// organization's settings (for 30 s), drops its copy when orgs announces the change. A cap
// set right after a campaign skips its recipients at once, and lifted again sends to them.
func TestSettingsChangeAppliesToTheNextCampaign(t *testing.T) {
	t.Parallel()
	tn := newMsgEnv(t, nil).newTenant("+13125553841", 100)
	phones := []string{"+12025553841", "+12025553842"}
	tn.contacts("now", phones)
	done := tn.awaitStatus(campaignTo(tn, "now"), "completed", 60*time.Second)
	require.EqualValues(t, 2, done.num("sentCount"), "no cap yet")

	tn.setFrequencyCap(24) // messaging read the organization (no cap) moments ago
	done = tn.awaitStatus(campaignTo(tn, "now"), "completed", 60*time.Second)
	assert.EqualValues(t, 0, done.num("sentCount"), "the cap set just before applies")
	assert.EqualValues(t, 2, done.metric("skipped"))

	tn.setFrequencyCap(0)
	done = tn.awaitStatus(campaignTo(tn, "now"), "completed", 60*time.Second)
	assert.EqualValues(t, 2, done.num("sentCount"), "the cap lifted just before applies")
	assert.EqualValues(t, 0, done.metric("skipped"))
}

// With every recipient in quiet hours (02:xx in their zone), the estimate is their zone's
// next 08:00 plus the sending time, not now.
func TestEstimatedCompletionWaitsForTheRecipientsMorning(t *testing.T) {
	t.Parallel()
	awayFromTheHour()
	tn := newMsgEnv(t, nil).newTenant("+13125553831", 100)
	night := zoneWhere(2)
	tn.contactsIn("eta", night, []string{"+12025553831", "+12025553832", "+12025553833"})
	loc, err := time.LoadLocation(night)
	require.NoError(t, err)
	local := time.Now().In(loc)
	morning := time.Date(local.Year(), local.Month(), local.Day(), 8, 0, 0, 0, loc)
	id := campaignTo(tn, "eta")
	var eta time.Time
	eventually(t, 30*time.Second, "an estimated completion", func() bool {
		s, _ := tn.getCampaign(id).metric("estimatedCompletionAt").(string)
		eta, _ = time.Parse(time.RFC3339Nano, s)
		return !eta.IsZero()
	})
	assert.False(t, eta.Before(morning), "estimatedCompletionAt %s: not before 08:00 in %s (%s)", eta, night, morning)
	assert.True(t, eta.Before(morning.Add(time.Minute)), "estimatedCompletionAt %s: within the first minute of %s", eta, morning)
	c := tn.getCampaign(id)
	assert.EqualValues(t, 0, c.num("sentCount"), "nothing sent at night")
	campaignOf(t, tn.do("POST", "/api/campaigns/"+id+"/cancel", nil), http.StatusOK)
}
