package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The SMS/MMS rule (pkg/route), the same for replies, campaigns, their test copies and polls:
// a mediaUrl means MMS whatever forceRoute says; forceRoute MMS is an MMS without media too
// (Twilio's SendAsMms); SMS without media is SMS; AUTO is MMS when the text is over 960
// characters (as SMS it would cost more than an MMS). An MMS costs 2 credits, an SMS 1 per
// started 480 characters.

// routeStack is a stack whose carrier is the fake Twilio, which records each message's media
// and SendAsMms.
func routeStack(t *testing.T) (*msgEnv, *twilioCarrier) {
	t.Helper()
	const token = "twilio-route-token"
	carrier := newTwilioCarrier(t, token, &http.Client{Timeout: 10 * time.Second, Transport: baseTransport}, 2)
	return newMsgEnv(t, twilioStack(carrier.URL, token, nil)), carrier
}

// carrierTo is every message the carrier took for phone, in arrival order.
func (c *twilioCarrier) carrierTo(phone string) []carrierMessage {
	var out []carrierMessage
	for _, m := range c.messages() {
		if m.To == phone {
			out = append(out, m)
		}
	}
	return out
}

// sentAs is how the carrier was asked to send m: "MMS" with media, "MMS (SendAsMms)" without,
// else "SMS".
func sentAs(m carrierMessage) string {
	switch {
	case len(m.Media) > 0:
		return "MMS"
	case m.SendAsMms == "true":
		return "MMS (SendAsMms)"
	}
	return "SMS"
}

func TestReplyRouteRule(t *testing.T) {
	t.Parallel()
	e, carrier := routeStack(t)
	const ada = "+12025550143"
	long := strings.Repeat("a", 961) // three 480-character segments as SMS
	for i, c := range []struct {
		name    string
		body    map[string]any
		sentAs  string
		credits float64
	}{
		{"forced MMS without media", map[string]any{"message": "forced", "forceRoute": "MMS"}, "MMS (SendAsMms)", 2},
		{"media overrides forced SMS", map[string]any{"message": "a picture", "mediaUrl": "https://example.com/a.png", "forceRoute": "SMS"}, "MMS", 2},
		{"media under AUTO", map[string]any{"message": "a picture", "mediaUrl": "https://example.com/a.png"}, "MMS", 2},
		{"AUTO short text", map[string]any{"message": "short"}, "SMS", 1},
		{"AUTO at 960 characters", map[string]any{"message": strings.Repeat("b", 960)}, "SMS", 2},
		{"AUTO past 960 characters", map[string]any{"message": long, "forceRoute": "AUTO"}, "MMS (SendAsMms)", 2},
		{"forced SMS past 960 characters", map[string]any{"message": long, "forceRoute": "SMS"}, "SMS", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			tn := e.newTenant(fmt.Sprintf("+1312555%04d", 200+i), 10)
			tn.contact(ada, "Ada", true)
			before := len(carrier.carrierTo(ada))
			res := tn.do("POST", "/api/conversations/"+url.PathEscape(ada)+"/reply", c.body)
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
			assert.Equal(t, true, res.JSON(t)["success"])
			sent := carrier.carrierTo(ada)
			require.Len(t, sent, before+1, "one message reached the carrier")
			assert.Equal(t, c.sentAs, sentAs(sent[len(sent)-1]))
			assert.Equal(t, 10-c.credits, tn.balance())
		})
	}

	tn := e.newTenant("+13125550299", 10)
	tn.contact(ada, "Ada", true)
	res := tn.do("POST", "/api/conversations/"+url.PathEscape(ada)+"/reply", map[string]any{"message": "hi", "forceRoute": "FAX"})
	require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
	assert.Contains(t, res.ErrFields(t), "forceRoute", "an unknown route is still refused, naming the field")
}

func TestCampaignRouteRule(t *testing.T) {
	t.Parallel()
	e, carrier := routeStack(t)
	filler := strings.Repeat("x", 961)
	for i, c := range []struct {
		name    string
		body    map[string]any
		sentAs  string
		credits float64 // per message
	}{
		{"forced MMS without media", map[string]any{"message": "Hi {{firstName}}", "forceRoute": "MMS"}, "MMS (SendAsMms)", 2},
		{"media overrides forced SMS", map[string]any{"message": "Hi {{firstName}}", "mediaUrl": "https://example.com/a.png", "forceRoute": "SMS"}, "MMS", 2},
		{"AUTO past 960 characters", map[string]any{"message": "Hi {{firstName}} " + filler}, "MMS (SendAsMms)", 2},
		{"forced SMS past 960 characters", map[string]any{"message": "Hi {{firstName}} " + filler, "forceRoute": "SMS"}, "SMS", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			tn := e.newTenant(fmt.Sprintf("+1312555%04d", 300+i), 100)
			tag := fmt.Sprintf("route%d", i)
			phones := []string{fmt.Sprintf("+1202555%04d", 3000+10*i), fmt.Sprintf("+1202555%04d", 3001+10*i)}
			tn.contacts(tag, phones)
			body := map[string]any{"name": c.name, "contactFilter": map[string]any{"tags": []string{tag}}, "timezone": zoneWhere(12)}
			for k, v := range c.body {
				body[k] = v
			}
			created := campaignOf(t, tn.do("POST", "/api/campaigns", body), http.StatusCreated)
			tn.awaitStatus(created.str("id"), "completed", 60*time.Second)
			for _, p := range phones {
				sent := carrier.carrierTo(p)
				require.Len(t, sent, 1, "one message to %s", p)
				assert.Equal(t, c.sentAs, sentAs(sent[0]), p)
			}
			want := 100 - c.credits*float64(len(phones))
			eventually(t, 30*time.Second, fmt.Sprintf("balance %v", want), func() bool { return tn.balance() == want })

			// A test copy goes by the same rule (and costs nothing).
			const tester = "+12025553999"
			before := len(carrier.carrierTo(tester))
			res := tn.do("POST", "/api/campaigns/"+created.str("id")+"/test-send", map[string]any{"recipients": []string{tester}})
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
			eventually(t, 15*time.Second, "the test copy at the carrier", func() bool { return len(carrier.carrierTo(tester)) == before+1 })
			copyAs := c.sentAs
			if c.body["mediaUrl"] != nil { // the copy carries only the test send's own media
				copyAs = "SMS"
			}
			assert.Equal(t, copyAs, sentAs(carrier.carrierTo(tester)[before]))
			assert.Equal(t, want, tn.balance(), "test copies are free")
		})
	}
}
