package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
)

// Number pools (issue 29): a campaign sends from several of its organization's numbers
// (fromPhoneNumberIds). A recipient hears from the pool number that last exchanged a message
// with them, else one of their area code, else the least busy; each number keeps its own
// rate, so the pool's rates add up; a number the carrier refuses (30007, carrier filtering)
// leaves the campaign's rotation and its recipients are sent by the others.

// poolToken signs the fake Twilio's webhooks in poolStack.
const poolToken = "twilio-pool-token"

// poolStack is a stack whose carrier is the fake Twilio, which can refuse a number; extra
// adds to its configuration.
func poolStack(t *testing.T, extra ...map[string]string) (*msgEnv, *twilioCarrier) {
	t.Helper()
	const token = poolToken
	carrier := newTwilioCarrier(t, token, &http.Client{Timeout: 10 * time.Second, Transport: baseTransport}, 2)
	vars := map[string]string{}
	for _, m := range extra {
		for k, v := range m {
			vars[k] = v
		}
	}
	return newMsgEnv(t, twilioStack(carrier.URL, token, vars)), carrier
}

// poolText delivers a text from phone to our number to through the fake Twilio's webhook.
func (e *msgEnv) poolText(to, phone, body string) {
	e.t.Helper()
	res := e.webhook("/webhooks/twilio/inbound", poolToken, "", url.Values{
		"MessageSid": {newSID()}, "From": {phone}, "To": {to}, "Body": {body}, "AccountSid": {"ACe2e"},
	})
	require.Equal(e.t, http.StatusOK, res.Status, "%s", res.Body)
}

// poolNumber gives tn's organization a number sending rate messages per second and returns
// its id.
func (tn *tenant) poolNumber(number string, rate int32) string {
	t := tn.e.t
	t.Helper()
	res, err := tn.e.messaging.AddNumber(context.Background(), &messagingv1.AddNumberRequest{OrganizationId: tn.org, Number: number, MessagesPerSecond: rate})
	require.NoError(t, err)
	return res.GetPhoneNumberId()
}

// poolCampaign submits a campaign to tag's contacts from the pool and returns its id.
func (tn *tenant) poolCampaign(tag string, pool []string) string {
	t := tn.e.t
	t.Helper()
	return campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Pool " + tag, "message": "Doors open at 9, {{firstName}}", "contactFilter": map[string]any{"tags": []string{tag}},
		"timezone": zoneWhere(12), "fromPhoneNumberIds": pool,
	}), http.StatusCreated).str("id")
}

// fromOf is the number each phone's message came from at the carrier (one message each).
func fromOf(t *testing.T, carrier *twilioCarrier, phones []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range phones {
		sent := carrier.carrierTo(p)
		require.Len(t, sent, 1, "one message to %s", p)
		out[p] = sent[0].From
	}
	return out
}

// poolNumbers is the campaign detail's phoneNumbers by number.
func poolNumbers(t *testing.T, c campaign) map[string]map[string]any {
	t.Helper()
	list, ok := c["phoneNumbers"].([]any)
	require.True(t, ok, "phoneNumbers is a list: %v", c["phoneNumbers"])
	out := map[string]map[string]any{}
	for _, n := range list {
		m := n.(map[string]any)
		out[m["number"].(string)] = m
	}
	return out
}

func TestNumberPoolValidation(t *testing.T) {
	t.Parallel()
	e, _ := poolStack(t)
	tn := e.newTenant("+13125557100", 100)
	second := tn.poolNumber("+13125557101", 0)
	other := e.newTenant("+13125557199", 0) // another organization's number
	tn.contacts("poolcheck", []string{"+12025557100"})
	body := func(extra map[string]any) map[string]any {
		b := map[string]any{"name": "Pool check", "message": "Hi", "contactFilter": map[string]any{"tags": []string{"poolcheck"}},
			"timezone": zoneWhere(12), "scheduledFor": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	many := make([]string, 401)
	for i := range many {
		many[i] = uuid.NewString()
	}
	for _, c := range []struct {
		name  string
		extra map[string]any
		field string
	}{
		{"both fields", map[string]any{"fromPhoneNumberId": tn.numberID, "fromPhoneNumberIds": []string{tn.numberID, second}}, "fromPhoneNumberIds"},
		{"another organization's number", map[string]any{"fromPhoneNumberIds": []string{tn.numberID, other.numberID}}, "fromPhoneNumberIds[1]"},
		{"a missing number", map[string]any{"fromPhoneNumberIds": []string{uuid.NewString()}}, "fromPhoneNumberIds[0]"},
		{"empty", map[string]any{"fromPhoneNumberIds": []string{}}, "fromPhoneNumberIds"},
		{"over 400", map[string]any{"fromPhoneNumberIds": many}, "fromPhoneNumberIds"},
		{"a repeat", map[string]any{"fromPhoneNumberIds": []string{tn.numberID, second, tn.numberID}}, "fromPhoneNumberIds[2]"},
		{"not a uuid", map[string]any{"fromPhoneNumberIds": []string{"+13125557100"}}, "fromPhoneNumberIds[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := tn.do("POST", "/api/campaigns", body(c.extra))
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
			assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
			assert.Contains(t, res.ErrFields(t), c.field)
		})
	}

	created := campaignOf(t, tn.do("POST", "/api/campaigns", body(map[string]any{"fromPhoneNumberIds": []string{second, tn.numberID}})), http.StatusCreated)
	assert.Equal(t, []any{second, tn.numberID}, created["fromPhoneNumberIds"])
	assert.Equal(t, second, created.str("fromPhoneNumberId"), "the pool's first number")
	detail := tn.getCampaign(created.str("id"))
	assert.Equal(t, []any{second, tn.numberID}, detail["fromPhoneNumberIds"])
	assert.Empty(t, detail["phoneNumbers"], "no number used before the send")

	// A draft's pool is replaced by a fromPhoneNumberId sent alone.
	draft := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "Pool draft", "fromPhoneNumberIds": []string{tn.numberID, second}}), http.StatusCreated)
	res := tn.do("PUT", "/api/campaigns/"+draft.str("id")+"/draft", map[string]any{"fromPhoneNumberId": second})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	updated := tn.getCampaign(draft.str("id"))
	assert.Empty(t, updated["fromPhoneNumberIds"])
	assert.Equal(t, second, updated.str("fromPhoneNumberId"))
}

// Thirty recipients of no pool number's area code over three numbers of 2 messages a second
// each: ten from each number, none of the numbers over its own rate in any second of the
// carrier's clock, and the pool sending more in a second than one number may.
func TestNumberPoolSpreadsWithinEachRate(t *testing.T) {
	t.Parallel()
	e, carrier := poolStack(t)
	const rate = 2
	tn := e.newTenant("", 100)
	numbers := []string{"+13125557200", "+13125557201", "+13125557202"}
	var pool []string
	for _, n := range numbers {
		pool = append(pool, tn.poolNumber(n, rate))
	}
	phones := make([]string, 60)
	for i := range phones {
		phones[i] = fmt.Sprintf("+12025557%03d", 200+i)
	}
	tn.contacts("poolspread", phones)
	submitted := time.Now()
	id := tn.poolCampaign("poolspread", pool)
	// The estimate counts the pool's rates together: 60 messages at 3 x 2 a second take 10 s
	// from submission (one number's rate alone would say 30 s).
	var eta time.Time
	eventually(t, 10*time.Second, "an estimate once the audience is resolved", func() bool {
		at, _ := tn.getCampaign(id)["displayMetrics"].(map[string]any)["estimatedCompletionAt"].(string)
		eta, _ = time.Parse(time.RFC3339Nano, at)
		return at != ""
	})
	assert.Less(t, eta.Sub(submitted), 20*time.Second, "estimated at %s", eta)
	done := tn.awaitStatus(id, "completed", 90*time.Second)
	assert.EqualValues(t, 60, done.num("sentCount"))

	from := fromOf(t, carrier, phones)
	perNumber := map[string]int{}
	for _, f := range from {
		perNumber[f]++
	}
	assert.Equal(t, map[string]int{numbers[0]: 20, numbers[1]: 20, numbers[2]: 20}, perNumber, "spread over the pool")

	perSecond := map[string]map[int64]int{}
	together := map[int64]int{}
	for _, m := range carrier.messages() {
		if perSecond[m.From] == nil {
			perSecond[m.From] = map[int64]int{}
		}
		perSecond[m.From][m.At.Unix()]++
		together[m.At.Unix()]++
	}
	for number, seconds := range perSecond {
		for s, n := range seconds {
			assert.LessOrEqual(t, n, rate, "%s sent %d in second %d", number, n, s)
		}
	}
	most := 0
	for _, n := range together {
		most = max(most, n)
	}
	assert.Greater(t, most, rate, "the numbers send side by side: the pool's rates add up")

	detail := poolNumbers(t, tn.getCampaign(id))
	require.Len(t, detail, 3)
	for i, n := range numbers {
		assert.Equal(t, pool[i], detail[n]["id"])
		assert.EqualValues(t, 20, detail[n]["sentCount"], n)
		assert.Equal(t, false, detail[n]["removed"], n)
	}
}

// A contact who texted number B before gets the campaign from B, even where the pool has a
// number of their area code; a new contact gets the pool's number of their area code; one of
// an area code the pool lacks gets the least busy number.
func TestNumberPoolStickySenderAndAreaCode(t *testing.T) {
	t.Parallel()
	e, carrier := poolStack(t)
	tn := e.newTenant("", 100)
	a, b, c := "+13125557300", "+14155557300", "+16465557300"
	pool := []string{tn.poolNumber(a, 0), tn.poolNumber(b, 0), tn.poolNumber(c, 0)}
	const (
		replied = "+16465557301" // C's area code, but they texted B
		local   = "+14155557302" // B's area code
		chicago = "+13125557303" // A's area code
		distant = "+12025557304" // no pool number's area code
	)
	phones := []string{replied, local, chicago, distant}
	tn.contacts("poolsticky", phones)
	e.poolText(b, replied, "Is the hall open on Sunday?")
	eventually(t, 15*time.Second, "the reply in the thread", func() bool { return len(tn.thread(replied)) == 1 })

	id := tn.poolCampaign("poolsticky", pool)
	tn.awaitStatus(id, "completed", 60*time.Second)
	from := fromOf(t, carrier, phones)
	assert.Equal(t, b, from[replied], "the number they texted")
	assert.Equal(t, b, from[local], "their area code's number")
	assert.Equal(t, a, from[chicago], "their area code's number")
	assert.Equal(t, c, from[distant], "the number given fewest messages")

	// The next campaign keeps each recipient's number: the last to text them.
	second := tn.poolCampaign("poolsticky", []string{pool[2], pool[0], pool[1]})
	tn.awaitStatus(second, "completed", 60*time.Second)
	for _, p := range phones {
		sent := carrier.carrierTo(p)
		require.Len(t, sent, 2, p)
		assert.Equal(t, from[p], sent[1].From, "%s hears from the same number", p)
	}
}

// The carrier refuses every message from B (Twilio 30007, carrier filtering): B leaves the
// campaign's rotation, the campaign detail says so and why, and every recipient is texted
// once, by A or C; nothing fails.
func TestNumberPoolRefusedNumberLeavesRotation(t *testing.T) {
	t.Parallel()
	e, carrier := poolStack(t)
	tn := e.newTenant("", 100)
	a, b, c := "+13125557400", "+13125557401", "+13125557402"
	pool := []string{tn.poolNumber(a, 0), tn.poolNumber(b, 0), tn.poolNumber(c, 0)}
	carrier.refuseFrom(b, 30007)
	phones := make([]string, 30)
	for i := range phones {
		phones[i] = fmt.Sprintf("+12025557%03d", 400+i)
	}
	tn.contacts("poolrefused", phones)
	id := tn.poolCampaign("poolrefused", pool)
	done := tn.awaitStatus(id, "completed", 60*time.Second)
	assert.EqualValues(t, 30, done.num("sentCount"))
	assert.EqualValues(t, 0, done.num("failedCount"))

	from := fromOf(t, carrier, phones)
	for p, f := range from {
		assert.Contains(t, []string{a, c}, f, "%s texted by a number left in rotation", p)
	}
	detail := poolNumbers(t, tn.getCampaign(id))
	require.Len(t, detail, 3)
	assert.Equal(t, true, detail[b]["removed"])
	assert.True(t, strings.Contains(detail[b]["removedReason"].(string), "30007"), "reason: %v", detail[b]["removedReason"])
	assert.EqualValues(t, 0, detail[b]["sentCount"])
	for _, n := range []string{a, c} {
		assert.Equal(t, false, detail[n]["removed"], n)
		assert.Equal(t, "", detail[n]["removedReason"], n)
	}
	assert.EqualValues(t, 30, detail[a]["sentCount"].(float64)+detail[c]["sentCount"].(float64))
}

// The carrier takes B's messages, then reports them undelivered with 30007 (filtering found
// after the fact): B leaves the rotation at the first report and its recipients still queued
// are sent by A. Each recipient is handed to the carrier once.
func TestNumberPoolNumberFilteredAfterSendingLeavesRotation(t *testing.T) {
	t.Parallel()
	e, carrier := poolStack(t)
	tn := e.newTenant("", 100)
	a, b := "+13125557500", "+13125557501"
	pool := []string{tn.poolNumber(a, 1), tn.poolNumber(b, 1)} // slow numbers: B's queue waits for its reports
	carrier.filterFrom(b, 30007)
	phones := make([]string, 10)
	for i := range phones {
		phones[i] = fmt.Sprintf("+12025557%03d", 500+i)
	}
	tn.contacts("poolfiltered", phones)
	id := tn.poolCampaign("poolfiltered", pool)
	tn.awaitStatus(id, "completed", 90*time.Second)

	fromB := 0
	for _, f := range fromOf(t, carrier, phones) {
		if f == b {
			fromB++
		}
	}
	assert.GreaterOrEqual(t, fromB, 1, "B sent before its first report")
	assert.Less(t, fromB, 5, "B's queued recipients moved to A")
	detail := poolNumbers(t, tn.getCampaign(id))
	assert.Equal(t, true, detail[b]["removed"])
	assert.Contains(t, detail[b]["removedReason"], "30007")
	assert.Equal(t, false, detail[a]["removed"])
	assert.EqualValues(t, 10-fromB, detail[a]["sentCount"])
}
