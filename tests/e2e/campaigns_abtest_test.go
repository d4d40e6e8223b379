package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// variant reads one of displayMetrics' A/B figures.
func (c campaign) variant(k string) map[string]any {
	m, _ := c["displayMetrics"].(map[string]any)[k].(map[string]any)
	return m
}

// campaignTexts is the campaign texts (outgoing, starting with one of prefixes) in phone's
// thread.
func (tn *tenant) campaignTexts(phone string, prefixes ...string) []string {
	var out []string
	for _, m := range tn.thread(phone) {
		body, _ := m["message"].(string)
		for _, p := range prefixes {
			if m["direction"] == "outgoing" && strings.HasPrefix(body, p) {
				out = append(out, body)
			}
		}
	}
	return out
}

// An A/B campaign to 40 contacts: 2 recipients get variant A and 2 variant B (5% each), the
// others nothing while it waits; replies from B's recipients (and a STOP from one of A's,
// which counts nowhere) make B the winner once abTestWaitMinutes have passed, and the other
// 36 get B's text. Only what was sent is paid. CHORUS_AB_WAIT_UNIT makes a "minute" a second.
func TestAbCampaignSendsTheWinnerToTheRest(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, map[string]string{"CHORUS_AB_WAIT_UNIT": "1s"})
	tn := e.newTenant("+13125550230", 100)
	var phones []string
	for i := range 40 {
		phones = append(phones, fmt.Sprintf("+1202555%04d", 7000+i))
	}
	tn.contacts("ab", phones)

	const wait = 20 // seconds here
	id := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "AB", "message": "Base {{firstName}}", "contactFilter": map[string]any{"tags": []string{"ab"}}, "timezone": zoneWhere(12),
		"isAbTest": true, "messageVariantA": "Alpha {{firstName}}", "messageVariantB": "Bravo {{firstName}}", "abTestWaitMinutes": wait,
	}), http.StatusCreated).str("id")

	var c campaign
	eventually(t, 30*time.Second, "both samples sent", func() bool {
		c = tn.getCampaign(id)
		return c.variant("variantA")["sent"] == 2.0 && c.variant("variantB")["sent"] == 2.0
	})
	assert.Equal(t, "sending", c.str("status"), "waiting for the decision")
	assert.EqualValues(t, 40, c.num("totalCount"))
	assert.EqualValues(t, 2, c.variant("variantA")["recipients"])
	assert.EqualValues(t, 2, c.variant("variantB")["recipients"])
	assert.Nil(t, c["displayMetrics"].(map[string]any)["winner"], "undecided")

	var aGot, bGot, rest []string
	for _, p := range phones {
		switch texts := tn.campaignTexts(p, "Alpha", "Bravo"); {
		case len(texts) == 0:
			rest = append(rest, p)
		case strings.HasPrefix(texts[0], "Alpha"):
			aGot = append(aGot, p)
		default:
			bGot = append(bGot, p)
		}
	}
	require.Len(t, aGot, 2)
	require.Len(t, bGot, 2)
	require.Len(t, rest, 36, "the rest waits for the winner")

	for _, p := range bGot {
		e.text(tn.number, p, "Love it!")
	}
	e.text(tn.number, aGot[0], "STOP")
	eventually(t, 15*time.Second, "B's replies counted", func() bool {
		c = tn.getCampaign(id)
		return c.variant("variantB")["replies"] == 2.0
	})
	assert.EqualValues(t, 100, c.variant("variantB")["replyRate"])
	assert.EqualValues(t, 0, c.variant("variantA")["replies"], "an opt-out is no reply")
	assert.Nil(t, c["displayMetrics"].(map[string]any)["winner"], "still undecided: the replies came within the wait")

	done := tn.awaitStatus(id, "completed", time.Duration(wait+40)*time.Second)
	assert.Equal(t, "B", done["displayMetrics"].(map[string]any)["winner"])
	assert.EqualValues(t, 40, done.num("sentCount"))
	assert.EqualValues(t, 0, done.num("queuedCount"))
	for _, p := range rest {
		assert.Equal(t, []string{"Bravo Ada" + fmt.Sprint(indexOf(phones, p))}, tn.campaignTexts(p, "Alpha", "Bravo", "Base"), p)
	}
	for _, p := range append(aGot, bGot...) {
		assert.Len(t, tn.campaignTexts(p, "Alpha", "Bravo", "Base"), 1, "a sample recipient gets one message: %s", p)
	}
	eventually(t, 30*time.Second, "only what was sent is paid, the rest of the hold released", func() bool { return tn.balance() == 60 })
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// Each A/B variant's sample is 5% of the audience rounded down (39 recipients: one each); an
// audience too small for two non-empty samples (3 recipients) fails the campaign at queue time
// with the reason its detail shows, and nothing is sent or paid.
func TestAbSamplesAreFivePercentRoundedDown(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550231", 100)
	var phones []string
	for i := range 39 {
		phones = append(phones, fmt.Sprintf("+1202555%04d", 7100+i))
	}
	tn.contacts("ab39", phones)
	small := []string{"+12025557200", "+12025557201", "+12025557202"}
	tn.contacts("ab3", small)
	abTest := func(tag string) string {
		return campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
			"name": "AB " + tag, "message": "Base", "contactFilter": map[string]any{"tags": []string{tag}}, "timezone": zoneWhere(12),
			"isAbTest": true, "messageVariantA": "Alpha", "messageVariantB": "Bravo", "abTestWaitMinutes": 600,
		}), http.StatusCreated).str("id")
	}

	failed := tn.awaitStatus(abTest("ab3"), "failed", 30*time.Second)
	assert.Equal(t, "AB_TEST_AUDIENCE_TOO_SMALL", failed["failureReason"])
	assert.EqualValues(t, 0, failed.num("sentCount"))
	for _, p := range small {
		assert.Empty(t, tn.campaignTexts(p, "Alpha", "Bravo", "Base"), "nothing sent to %s", p)
	}

	id := abTest("ab39")
	var c campaign
	eventually(t, 30*time.Second, "both samples sent", func() bool {
		c = tn.getCampaign(id)
		return c.variant("variantA")["sent"] == 1.0 && c.variant("variantB")["sent"] == 1.0
	})
	assert.EqualValues(t, 1, c.variant("variantA")["recipients"], "5% of 39, rounded down")
	assert.EqualValues(t, 1, c.variant("variantB")["recipients"])
	assert.Nil(t, c["failureReason"])
}
