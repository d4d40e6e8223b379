package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
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

// eveningTenant is an organization sending from number, with state rules turned off when
// off, in a stack started away from the turn of an hour.
func eveningTenant(t *testing.T, number string, off bool) *tenant {
	t.Helper()
	awayFromTheHour()
	return newMsgEnv(t, nil).newTenantOf(&orgsv1.CreateOrganizationRequest{Timezone: "America/Chicago", StateQuietHoursOff: off}, number, 100)
}

// eveningContacts makes, under tag and in a zone where it is 20:xx, a contact whose state is
// Florida (floridian) and contacts known by their phones alone (others).
func eveningContacts(tn *tenant, tag, floridian string, others ...string) {
	tn.e.t.Helper()
	tn.contactsWith(tag, map[string]any{"timezone": zoneWhere(20), "state": "FL"}, []string{floridian})
	tn.contactsWith(tag, map[string]any{"timezone": zoneWhere(20)}, others)
}

// campaignTo sends a campaign to tag's contacts now, from a zone where it is noon.
func campaignTo(tn *tenant, tag string) string {
	t := tn.e.t
	t.Helper()
	return campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "S", "message": "Hi {{firstName}}", "contactFilter": map[string]any{"tags": []string{tag}}, "timezone": zoneWhere(12),
	}), http.StatusCreated).str("id")
}

func TestCampaignKeepsToTheRecipientsStateQuietHours(t *testing.T) {
	t.Parallel()
	tn := eveningTenant(t, "+13125550260", false)
	// Florida by the contact's state (a Washington, DC number) and by area code (Miami);
	// New York and DC have no law narrower than 08:00–21:00.
	const floridian, miami = "+12025556001", "+13055556002"
	const newYork, dc = "+12125556003", "+12025556004"
	eveningContacts(tn, "st", floridian, miami, newYork, dc)
	id := campaignTo(tn, "st")
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

// State rules turned off when the organization is made (chorusctl org create
// --no-state-quiet-hours) or later over REST leave the federal window alone.
func TestOrganizationWithoutStateRulesKeepsToTheFederalWindow(t *testing.T) {
	t.Parallel()
	for name, atCreation := range map[string]bool{"at creation": true, "over REST": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var tn *tenant
			if atCreation {
				tn = eveningTenant(t, "+13125550261", true)
			} else {
				// Set before messaging first reads the organization: its orgs client keeps an
				// organization up to 30 s, so a change applies within that time.
				tn = eveningTenant(t, "", false)
				assert.Equal(t, true, tn.settings()["stateQuietHours"], "on by default")
				res := tn.do("PATCH", "/api/organization/settings", map[string]any{"stateQuietHours": false})
				require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
				assert.Equal(t, false, res.JSON(t)["stateQuietHours"])
				n, err := tn.e.messaging.AddNumber(context.Background(), &messagingv1.AddNumberRequest{OrganizationId: tn.org, Number: "+13125550262", IsDefault: true})
				require.NoError(t, err)
				tn.number, tn.numberID = "+13125550262", n.GetPhoneNumberId()
			}
			const floridian, miami = "+12025556011", "+13055556012"
			eveningContacts(tn, "st", floridian, miami)
			id := campaignTo(tn, "st")
			eventually(t, 30*time.Second, "both sent at 20:xx", func() bool { return tn.getCampaign(id).num("sentCount") == 2 })
			for _, p := range []string{floridian, miami} {
				assert.Len(t, tn.thread(p), 1, p)
			}
		})
	}
}

func TestPollQuestionKeepsToTheRecipientsStateQuietHours(t *testing.T) {
	t.Parallel()
	tn := eveningTenant(t, "+13125550262", false)
	const floridian, newYork = "+12025556021", "+12125556022"
	eveningContacts(tn, "stp", floridian, newYork)
	id := tn.createPoll(pollBody("State"))["id"].(string)
	tn.startPoll(id, "stp")
	assert.Equal(t, []string{pollIntroFor("Ada0")}, tn.awaitOutgoing(newYork, 1), "New York's question sent at 20:xx")
	tn.awaitMessagesCounted(2)
	assert.Empty(t, tn.thread(floridian), "Florida's question held until 08:00")
}

// Windows narrower than Florida's, chosen to be closed on every day of the week while the
// federal window is open, so the test holds on any day at any hour: Rhode Island at 18:xx
// (it closes at 18:00 on weekdays, 17:00 on Saturday, and all Sunday), known by the contact's
// state, and Texas at 08:xx (it opens at 09:00, at noon on Sunday), known by a Texas area
// code (Austin). A New York recipient at 08:xx is sent at once.
func TestCampaignKeepsToRhodeIslandAndTexasWindowsOnAnyDay(t *testing.T) {
	t.Parallel()
	awayFromTheHour()
	tn := newMsgEnv(t, nil).newTenantOf(&orgsv1.CreateOrganizationRequest{Timezone: "America/Chicago"}, "+13125550266", 100)
	const rhodeIslander, austin, newYork = "+12025556031", "+15125556032", "+12125556033"
	tn.contactsWith("days", map[string]any{"timezone": zoneWhere(18), "state": "RI"}, []string{rhodeIslander})
	tn.contactsWith("days", map[string]any{"timezone": zoneWhere(8)}, []string{austin, newYork})
	id := campaignTo(tn, "days")
	eventually(t, 30*time.Second, "New York sent", func() bool { return tn.getCampaign(id).num("sentCount") == 1 })
	time.Sleep(2 * time.Second)
	c := tn.getCampaign(id)
	assert.EqualValues(t, 1, c.num("sentCount"))
	assert.EqualValues(t, 2, c.num("queuedCount"), "Rhode Island and Texas wait")
	assert.Len(t, tn.thread(newYork), 1)
	for _, p := range []string{rhodeIslander, austin} {
		assert.Empty(t, tn.thread(p), "nothing handed over outside the state's window: %s", p)
	}
}
