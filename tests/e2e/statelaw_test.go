package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// Between 20:00 and 21:00 local the federal window is open and Florida's (08:00–20:00) is
// closed, on any day: recipients in a zone where it is 20:xx now tell the two apart.

// awayFromTheHour waits out the last minute of an hour, so that a zone picked by its hour
// keeps it for the test.
func awayFromTheHour() {
	if now := time.Now(); now.Minute() == 59 {
		time.Sleep(time.Until(now.Truncate(time.Hour).Add(time.Hour + 5*time.Second)))
	}
}

func TestCampaignKeepsToTheRecipientsStateQuietHours(t *testing.T) {
	t.Parallel()
	awayFromTheHour()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550260", 100)
	evening := zoneWhere(20)
	// Florida by the contact's state (a Washington, DC number) and by area code (Miami);
	// New York and DC have no law narrower than 08:00–21:00.
	const floridian, miami = "+12025556001", "+13055556002"
	const newYork, dc = "+12125556003", "+12025556004"
	tn.contactsWith("st", map[string]any{"timezone": evening, "state": "FL"}, []string{floridian})
	tn.contactsWith("st", map[string]any{"timezone": evening}, []string{miami, newYork, dc})
	id := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "S", "message": "Hi {{firstName}}", "contactFilter": map[string]any{"tags": []string{"st"}}, "timezone": zoneWhere(12),
	}), http.StatusCreated).str("id")
	eventually(t, 30*time.Second, "the recipients outside Florida sent", func() bool { return tn.getCampaign(id).num("sentCount") == 2 })
	time.Sleep(2 * time.Second)
	c := tn.getCampaign(id)
	assert.Equal(t, "sending", c.str("status"), "not complete while two wait")
	assert.EqualValues(t, 2, c.num("sentCount"))
	assert.EqualValues(t, 2, c.num("queuedCount"))
	for _, p := range []string{floridian, miami} {
		assert.Empty(t, tn.thread(p), "nothing handed over after 20:00 in Florida: %s", p)
	}
	for _, p := range []string{newYork, dc} {
		assert.Len(t, tn.thread(p), 1, p)
	}
}

func TestOrganizationWithoutStateRulesKeepsToTheFederalWindow(t *testing.T) {
	t.Parallel()
	awayFromTheHour()
	e := newMsgEnv(t, nil)
	tn := e.newTenantOf(&orgsv1.CreateOrganizationRequest{Timezone: "America/Chicago", StateQuietHoursOff: true}, "+13125550261", 100)
	const floridian, miami = "+12025556011", "+13055556012"
	tn.contactsWith("st", map[string]any{"timezone": zoneWhere(20), "state": "FL"}, []string{floridian})
	tn.contactsWith("st", map[string]any{"timezone": zoneWhere(20)}, []string{miami})
	id := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "S", "message": "Hi {{firstName}}", "contactFilter": map[string]any{"tags": []string{"st"}}, "timezone": zoneWhere(12),
	}), http.StatusCreated).str("id")
	eventually(t, 30*time.Second, "both sent at 20:xx", func() bool { return tn.getCampaign(id).num("sentCount") == 2 })
	for _, p := range []string{floridian, miami} {
		assert.Len(t, tn.thread(p), 1, p)
	}
}
