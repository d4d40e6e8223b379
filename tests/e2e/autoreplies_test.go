package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/registry"
	tenantmd "github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

const (
	yesAnswer     = "Great, see you Friday!"
	noAnswer      = "Sorry to miss you."
	startAnswer   = "Doors open at 7pm."
	parkingAnswer = "Free parking behind the hall: https://example.com/parking"
)

// autoReplyCampaign sends tn's contacts tagged tag a campaign that answers automatically and
// waits until it completed.
func autoReplyCampaign(t *testing.T, tn *tenant, tag string) string {
	t.Helper()
	created := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Party", "message": "Party Friday! Coming? Reply YES or NO", "contactFilter": map[string]any{"tags": []string{tag}},
		"timezone": zoneWhere(12), "autoReplyEnabled": true, "yesResponse": yesAnswer, "noResponse": noAnswer,
		"faqReplies": []map[string]any{
			{"question": "What time does the party start?", "answer": startAnswer},
			{"question": "Is there parking?", "answer": parkingAnswer},
		},
	}), http.StatusCreated)
	assert.Equal(t, true, created["autoReplyEnabled"])
	tn.awaitStatus(created.str("id"), "completed", 60*time.Second)
	return created.str("id")
}

// outgoing returns the texts of the outgoing messages of tn's thread with phone, oldest first.
func (tn *tenant) outgoing(phone string) []string {
	var out []string
	thread := tn.thread(phone)
	for i := len(thread) - 1; i >= 0; i-- {
		if thread[i]["direction"] == "outgoing" {
			out = append(out, thread[i]["message"].(string))
		}
	}
	return out
}

// awaitOutgoing waits until tn's thread with phone holds at least n outgoing messages and
// returns their texts, oldest first.
func (tn *tenant) awaitOutgoing(phone string, n int) []string {
	t := tn.e.t
	t.Helper()
	var out []string
	eventually(t, 30*time.Second, fmt.Sprintf("%d outgoing messages to %s", n, phone), func() bool {
		out = tn.outgoing(phone)
		return len(out) >= n
	})
	return out
}

// A campaign with auto-replies answers, over the sandbox: a yes with its yesResponse, a no with
// its noResponse, a question with the best-matching FAQ answer (its link shortened as a reply's
// is), and a question answering an auto-reply too; nothing to a question no FAQ matches, to a
// STOP (only the opt-out's own confirmation), to an opted-out contact, or to a second yes of
// the same contact; one answer per inbound message even when its event comes again; and each
// answer costs its credits.
func TestCampaignAutoReplies(t *testing.T) {
	t.Parallel()
	redisURL, rdb := redistest.New(t)
	e := newMsgEnv(t, map[string]string{"CHORUS_REDIS_URL": redisURL})
	tn := e.newTenant("+13125550170", 100)
	yes, no, parking, dress, stop, optedOut := "+12025553001", "+12025553002", "+12025553004", "+12025553005", "+12025553008", "+12025553009"
	tn.contacts("party", []string{yes, no, parking, dress, stop, optedOut})
	id := autoReplyCampaign(t, tn, "party")
	eventually(t, 30*time.Second, "the campaign's 6 messages paid", func() bool { return tn.balance() == 94 })

	// Opted out without a keyword (as a carrier reports it): its latest message is still the
	// campaign's, so its "yes" is attributed to the campaign.
	contacts := contactsv1.NewContactsServiceClient(dial(t, e.st.Addr(registry.Contacts)))
	_, err := contacts.SetConsent(asService(tn, tenantmd.AccessWrite), &contactsv1.SetConsentRequest{
		Phone: optedOut, OptedIn: false, OccurredAt: timestamppb.Now(), Source: "carrier",
	})
	require.NoError(t, err)

	e.text(tn.number, optedOut, "yes")
	e.text(tn.number, stop, "STOP")
	e.text(tn.number, dress, "What's the dress code?")
	e.text(tn.number, no, "No thanks")
	e.text(tn.number, yes, "Yes!")
	e.text(tn.number, parking, "Is there parking near the venue?")

	const campaignText = "Party Friday! Coming? Reply YES or NO"
	assert.Equal(t, []string{campaignText, yesAnswer}, tn.awaitOutgoing(yes, 2))
	assert.Equal(t, []string{campaignText, noAnswer}, tn.awaitOutgoing(no, 2))
	got := tn.awaitOutgoing(parking, 2)
	require.Len(t, got, 2)
	assert.Regexp(t, `^Free parking behind the hall: http://\S+/l/[0-9A-Za-z]{8}$`, got[1], "the link shortened")

	// The yes's event comes again (an outbox replayed after its records were pruned), the same
	// contact says yes again, then asks a question in answer to the auto-reply. Events are
	// handled in order: once the question is answered, the others were handled.
	replay(t, rdb, tn.org, e.lastIncomingID(tn, yes))
	e.text(tn.number, yes, "yes")
	e.text(tn.number, yes, "what time does it start?")
	assert.Equal(t, []string{campaignText, yesAnswer, startAnswer}, tn.awaitOutgoing(yes, 3))

	thread := tn.thread(yes) // newest first
	require.Len(t, thread, 6, "campaign, Yes!, answer, yes, question, answer")
	assert.Equal(t, "what time does it start?", thread[1]["message"])
	assert.Equal(t, startAnswer, thread[0]["message"], "the answer follows its question in the thread")

	assert.Equal(t, []string{campaignText}, tn.outgoing(dress), "no FAQ matches the dress code")
	assert.Equal(t, []string{campaignText}, tn.outgoing(optedOut), "nothing to an opted-out contact")
	stopped := tn.outgoing(stop)
	require.Len(t, stopped, 2, "the campaign and the opt-out's confirmation")
	assert.NotContains(t, []string{yesAnswer, noAnswer, startAnswer}, stopped[1])
	assert.False(t, strings.HasPrefix(stopped[1], "Free parking"))

	// Four answers at one credit each (the STOP confirmation is free).
	eventually(t, 30*time.Second, "the answers paid", func() bool { return tn.balance() == 90 })
	time.Sleep(300 * time.Millisecond)
	assert.EqualValues(t, 90, tn.balance(), "nothing more")
	c := tn.getCampaign(id)
	assert.EqualValues(t, 6, c.num("sentCount"), "answers are not campaign messages")
}

// lastIncomingID is the id of the latest inbound message of tn's thread with phone.
func (e *msgEnv) lastIncomingID(tn *tenant, phone string) string {
	for _, m := range tn.thread(phone) {
		if m["direction"] == "incoming" {
			return m["id"].(string)
		}
	}
	e.t.Fatalf("no incoming message from %s", phone)
	return ""
}

// replay publishes messaging's message.received event of message again, under a new event id.
func replay(t *testing.T, rdb *redis.Client, org, message string) {
	t.Helper()
	for _, ev := range streamEvents(t, rdb, "messaging", "message.received", org) {
		if !strings.Contains(string(ev.Payload), message) {
			continue
		}
		require.NoError(t, rdb.XAdd(context.Background(), &redis.XAddArgs{
			Stream: outbox.StreamName("messaging"),
			Values: []any{"event_id", uuid.NewString(), "type", ev.Type, "org", ev.Org, "payload", ev.Payload},
		}).Err())
		return
	}
	t.Fatalf("no message.received event of %s", message)
}

// An answer the balance cannot pay for is not sent: it shows in the thread as failed, costs
// nothing, and the rest goes on (the campaign stays completed, the STOP is confirmed).
func TestCampaignAutoReplyWithoutCredits(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550171", 1)
	phone := "+12025553011"
	tn.contacts("broke", []string{phone})
	id := autoReplyCampaign(t, tn, "broke")
	eventually(t, 30*time.Second, "the campaign's message paid", func() bool { return tn.balance() == 0 })

	e.text(tn.number, phone, "yes")
	var answer map[string]any
	eventually(t, 30*time.Second, "the answer's outcome", func() bool {
		thread := tn.thread(phone)
		answer = thread[0]
		return len(thread) == 3 && answer["status"] == "failed"
	})
	assert.Equal(t, yesAnswer, answer["message"])
	assert.Equal(t, "outgoing", answer["direction"])

	e.text(tn.number, phone, "STOP")
	eventually(t, 30*time.Second, "the STOP confirmed", func() bool {
		thread := tn.thread(phone)
		return len(thread) == 5 && thread[0]["direction"] == "outgoing" && thread[0]["status"] != "failed"
	})
	assert.EqualValues(t, 0, tn.balance())
	c := tn.getCampaign(id)
	assert.Equal(t, "completed", c.str("status"))
	assert.EqualValues(t, 1, c.num("sentCount"))
	assert.EqualValues(t, 0, c.num("failedCount"), "a failed answer is not a failed campaign message")
}

// A paused campaign sends nothing, its automatic answers included: a yes that comes while it
// is paused is never answered, not even after resume, while one after the resume is; once the
// campaign is canceled nothing is answered. A recipient at night in its own zone keeps the
// campaign sending, so that it can be paused and canceled after the others got their texts.
func TestCampaignAutoRepliesStopWithTheCampaign(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550171", 100)
	paused, resumed, canceled := "+12025553101", "+12025553102", "+12025553103"
	tn.contacts("held", []string{paused, resumed, canceled})
	tn.contactsIn("heldn", zoneWhere(3), []string{"+12025553109"})
	id := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Held", "message": "Party Friday! Coming? Reply YES or NO", "contactFilter": map[string]any{"tags": []string{"held", "heldn"}},
		"timezone": zoneWhere(12), "autoReplyEnabled": true, "yesResponse": yesAnswer, "noResponse": noAnswer,
	}), http.StatusCreated).str("id")
	eventually(t, 30*time.Second, "the daytime recipients sent", func() bool { return tn.getCampaign(id).num("sentCount") == 3 })
	const campaignText = "Party Friday! Coming? Reply YES or NO"
	replies := func(n int) { // the campaign counted n replies: their events were handled
		eventually(t, 30*time.Second, fmt.Sprintf("%d replies counted", n), func() bool {
			return tn.getCampaign(id).num("replyCountExcludingOptouts") == float64(n)
		})
	}

	require.Equal(t, "paused", campaignOf(t, tn.do("POST", "/api/campaigns/"+id+"/pause", nil), http.StatusOK).str("status"))
	e.text(tn.number, paused, "Yes!")
	replies(1)
	require.Equal(t, "sending", campaignOf(t, tn.do("POST", "/api/campaigns/"+id+"/resume", nil), http.StatusOK).str("status"))
	e.text(tn.number, resumed, "yes")
	assert.Equal(t, []string{campaignText, yesAnswer}, tn.awaitOutgoing(resumed, 2), "answered after the resume")
	assert.Equal(t, []string{campaignText}, tn.outgoing(paused), "the yes that came while paused is not answered")

	require.Equal(t, "completed", campaignOf(t, tn.do("POST", "/api/campaigns/"+id+"/cancel", nil), http.StatusOK).str("status"))
	e.text(tn.number, canceled, "No thanks")
	replies(3)
	time.Sleep(time.Second) // an answer would be queued with the event and sent at once
	assert.Equal(t, []string{campaignText}, tn.outgoing(canceled), "a canceled campaign answers nobody")
	assert.Equal(t, []string{campaignText}, tn.outgoing(paused))
}
