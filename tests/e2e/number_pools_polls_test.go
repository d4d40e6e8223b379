package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/redistest"
)

// Number pools for polls and auto-replies (issue 29): a poll started with fromPhoneNumberIds
// gives each participant one pool number, and every question goes from it; a pool campaign
// answers a contact from the number the contact texted.

// poolPollBody is a poll of two questions: a choice, then an open question.
func poolPollBody() map[string]any {
	return map[string]any{
		"name": "Pool poll", "timezone": zoneWhere(12),
		"questions": []map[string]any{
			{"questionNumber": 1, "text": "Q1: Coming? A) Yes B) No", "type": "multiple_choice", "responseCode": "coming",
				"options": []map[string]any{{"code": "A", "label": "Yes"}, {"code": "B", "label": "No"}}},
			{"questionNumber": 2, "text": "Q2: Bringing anyone?", "type": "open_ended", "responseCode": "guests"},
		},
	}
}

// A poll start's pool is checked as a campaign's: both fields, another organization's number,
// a repeat, an empty pool are 400 naming the field; nothing starts.
func TestPollNumberPoolValidation(t *testing.T) {
	t.Parallel()
	e, _ := poolStack(t)
	tn := e.newTenant("+13125557600", 100)
	second := tn.poolNumber("+13125557601", 0)
	other := e.newTenant("+13125557699", 0)
	tn.contacts("pollpoolcheck", []string{"+12025557600"})
	id := tn.createPoll(poolPollBody())["id"].(string)
	for _, c := range []struct {
		name  string
		extra map[string]any
		field string
	}{
		{"both fields", map[string]any{"fromPhoneNumberId": tn.numberID, "fromPhoneNumberIds": []string{tn.numberID, second}}, "fromPhoneNumberIds"},
		{"another organization's number", map[string]any{"fromPhoneNumberIds": []string{tn.numberID, other.numberID}}, "fromPhoneNumberIds[1]"},
		{"another organization's single number", map[string]any{"fromPhoneNumberId": other.numberID}, "fromPhoneNumberId"},
		{"a missing number", map[string]any{"fromPhoneNumberIds": []string{uuid.NewString()}}, "fromPhoneNumberIds[0]"},
		{"empty", map[string]any{"fromPhoneNumberIds": []string{}}, "fromPhoneNumberIds"},
		{"a repeat", map[string]any{"fromPhoneNumberIds": []string{tn.numberID, second, tn.numberID}}, "fromPhoneNumberIds[2]"},
		{"not a uuid", map[string]any{"fromPhoneNumberIds": []any{42}}, "fromPhoneNumberIds[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"contactFilter": map[string]any{"tags": []string{"pollpoolcheck"}}}
			for k, v := range c.extra {
				body[k] = v
			}
			res := tn.do("POST", "/api/polls/"+id+"/start", body)
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
			assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
			assert.Contains(t, res.ErrFields(t), c.field)
		})
	}
	assert.Equal(t, "draft", tn.getPoll(id)["status"], "nothing started")
}

// A poll over a pool of two numbers: each participant gets every question from one number
// (of their area code when the pool has one, else the least busy), answers it there, and the
// answers are recorded.
func TestPollNumberPoolKeepsEachParticipantOnOneNumber(t *testing.T) {
	t.Parallel()
	redisURL, _ := redistest.New(t)
	e, carrier := poolStack(t, map[string]string{"CHORUS_REDIS_URL": redisURL})
	tn := e.newTenant("", 100)
	a, b := "+13125557500", "+14155557500"
	pool := []string{tn.poolNumber(a, 0), tn.poolNumber(b, 0)}
	const (
		chicago = "+13125557501" // a's area code
		sf      = "+14155557502" // b's area code
		distant = "+12025557503" // neither
	)
	phones := []string{chicago, sf, distant}
	tn.contacts("pollpool", phones)
	id := tn.createPoll(poolPollBody())["id"].(string)
	res := tn.do("POST", "/api/polls/"+id+"/start", map[string]any{
		"contactFilter": map[string]any{"tags": []string{"pollpool"}}, "fromPhoneNumberIds": pool,
	})
	require.Equal(t, http.StatusAccepted, res.Status, "%s", res.Body)

	from := map[string]string{}
	for _, p := range phones {
		require.Equal(t, []string{"Q1: Coming? A) Yes B) No"}, tn.awaitAsked(p, 1))
		sent := carrier.carrierTo(p)
		require.Len(t, sent, 1, p)
		from[p] = sent[0].From
	}
	assert.Equal(t, a, from[chicago], "their area code's number")
	assert.Equal(t, b, from[sf], "their area code's number")
	assert.Contains(t, []string{a, b}, from[distant])

	for _, p := range phones {
		e.poolText(from[p], p, "A")
	}
	for _, p := range phones {
		assert.Equal(t, "Q2: Bringing anyone?", tn.awaitAsked(p, 2)[1], p)
		e.poolText(from[p], p, "Two friends")
	}
	tn.awaitPollStatus(id, "completed")
	_, ps := tn.participants(id, "")
	for _, p := range phones {
		require.Contains(t, ps, p)
		assert.Equal(t, "completed", ps[p]["status"], p)
		assert.Equal(t, []string{"coming=A", "guests=Two friends"}, answers(ps[p]), p)
		sent := carrier.carrierTo(p)
		require.Len(t, sent, 2, p)
		for _, m := range sent {
			assert.Equal(t, from[p], m.From, "%s hears every question from one number", p)
		}
	}
}

// A pool campaign's auto-reply goes from the number the contact texted (the pool's second
// number here), not from the pool's first number: the answer lands in the contact's thread.
func TestNumberPoolAutoReplyFromTheNumberTexted(t *testing.T) {
	t.Parallel()
	redisURL, _ := redistest.New(t)
	e, carrier := poolStack(t, map[string]string{"CHORUS_REDIS_URL": redisURL})
	tn := e.newTenant("", 100)
	a, b := "+13125557800", "+14155557800"
	pool := []string{tn.poolNumber(a, 0), tn.poolNumber(b, 0)}
	const guest = "+14155557801" // b's area code: the campaign texts them from b
	tn.contacts("poolauto", []string{guest})
	created := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Pool party", "message": "Party Friday! Coming? Reply YES or NO", "contactFilter": map[string]any{"tags": []string{"poolauto"}},
		"timezone": zoneWhere(12), "autoReplyEnabled": true, "yesResponse": yesAnswer, "fromPhoneNumberIds": pool,
	}), http.StatusCreated)
	tn.awaitStatus(created.str("id"), "completed", 60*time.Second)
	first := carrier.carrierTo(guest)
	require.Len(t, first, 1)
	require.Equal(t, b, first[0].From)

	e.poolText(b, guest, "Yes!")
	eventually(t, 30*time.Second, "the auto-reply at the carrier", func() bool { return len(carrier.carrierTo(guest)) == 2 })
	answer := carrier.carrierTo(guest)[1]
	assert.Equal(t, yesAnswer, answer.Body)
	assert.Equal(t, b, answer.From, "from the number the contact texted")
}
