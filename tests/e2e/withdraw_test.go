package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A campaign canceled while one of its messages waits for the recipient's morning (03:00 in
// their zone; the others, in the day, were sent): the cancel withdraws it before it answers,
// so analytics no longer counts it (not in total, neither sent nor failed), the thread shows
// nothing, the campaign counts it neither sent nor failed nor queued, and its credits are
// released: the balance is as before the campaign less the messages sent.
func TestCampaignCancelWithdrawsAMessageHeldForQuietHours(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550291", 100)
	day := []string{"+12025556193", "+12025556194", "+12025556195"}
	const night = "+12025556191"
	tn.contacts("held", day)
	tn.contactsIn("heldn", zoneWhere(3), []string{night})
	before := tn.balance()
	id := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Held", "message": "Hi {{firstName}}", "contactFilter": map[string]any{"tags": []string{"held", "heldn"}}, "timezone": zoneWhere(12),
	}), http.StatusCreated).str("id")
	eventually(t, 30*time.Second, "the daytime recipients sent", func() bool { return tn.getCampaign(id).num("sentCount") == 3 })
	tn.awaitMessagesCounted(4)

	c := campaignOf(t, tn.do("POST", "/api/campaigns/"+id+"/cancel", nil), http.StatusOK)
	assert.Equal(t, "completed", c.str("status"))
	tn.assertWithdrawn(night, 3, before-3)
	c = tn.getCampaign(id)
	assert.EqualValues(t, 4, c.num("totalCount"))
	assert.EqualValues(t, 3, c.num("sentCount"))
	assert.Zero(t, c.num("failedCount"), "a withdrawn message is no failure")
	assert.Zero(t, c.num("queuedCount"))
}

// The same for a poll closed while its first question waits for the recipient's morning.
func TestPollCloseWithdrawsAQuestionHeldForQuietHours(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550292", 100)
	const night = "+12025556192"
	tn.contactsIn("held", zoneWhere(3), []string{night})
	before := tn.balance()
	id := tn.createPoll(pollBody("Held"))["id"].(string)
	tn.startPoll(id, "held")
	tn.awaitMessagesCounted(1)

	res := tn.do("POST", "/api/polls/"+id+"/close", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, "completed", res.JSON(t)["status"])
	tn.assertWithdrawn(night, 0, before)
	_, ps := tn.participants(id, "")
	require.Contains(t, ps, night)
	assert.Equal(t, "poll_closed", ps[night]["terminationReason"])
}

// awaitMessagesCounted waits until analytics counts n messages of the organization (a queued
// message counts until it is sent, failed or withdrawn).
func (tn *tenant) awaitMessagesCounted(n float64) {
	eventually(tn.e.t, 30*time.Second, "analytics counts the queued messages", func() bool {
		return tn.messageTotals()["total"] == n
	})
}

// messageTotals are analytics' message counts of the organization.
func (tn *tenant) messageTotals() map[string]any {
	return tn.analytics("overview").JSON(tn.e.t)["messages"].(map[string]any)
}

// assertWithdrawn checks, right after a cancel or close answered, that the message to phone
// is withdrawn: nothing in its thread nor in the conversations, analytics counting the sent
// messages only (none failed), and the balance back to balance.
func (tn *tenant) assertWithdrawn(phone string, sent, balance float64) {
	t := tn.e.t
	t.Helper()
	assert.Empty(t, tn.thread(phone), "nothing sent or failed in the thread")
	for _, c := range conversations(t, tn, "") {
		assert.NotEqual(t, phone, c.(map[string]any)["phoneNumber"], "no conversation")
	}
	eventually(t, 30*time.Second, "analytics counts the sent messages only", func() bool {
		m := tn.messageTotals()
		return m["total"] == sent && m["sent"] == sent && m["failed"] == 0.0
	})
	eventually(t, 30*time.Second, "the credits released", func() bool { return tn.balance() == balance })
}
