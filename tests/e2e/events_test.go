package e2e

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/sandbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
)

// streamEvent is one entry of a service's event stream.
type streamEvent struct {
	EntryID, EventID, Type, Org string
	Payload                     []byte
}

// streamEvents returns the entries of service's stream of type typ ("": any) about org, in stream order.
func streamEvents(t *testing.T, rdb *redis.Client, service, typ, org string) []streamEvent {
	t.Helper()
	entries, err := rdb.XRange(context.Background(), outbox.StreamName(service), "-", "+").Result()
	require.NoError(t, err)
	var out []streamEvent
	for _, e := range entries {
		ev := streamEvent{EntryID: e.ID}
		ev.EventID, _ = e.Values["event_id"].(string)
		ev.Type, _ = e.Values["type"].(string)
		ev.Org, _ = e.Values["org"].(string)
		payload, _ := e.Values["payload"].(string)
		ev.Payload = []byte(payload)
		if (typ == "" || ev.Type == typ) && ev.Org == org {
			out = append(out, ev)
		}
	}
	return out
}

// decodeEvents unmarshals the payload of each event into a new T.
func decodeEvents[T any, P interface {
	*T
	proto.Message
}](t *testing.T, evs []streamEvent) []P {
	t.Helper()
	out := make([]P, len(evs))
	for i, ev := range evs {
		out[i] = P(new(T))
		require.NoError(t, proto.Unmarshal(ev.Payload, out[i]), "payload of %s", ev.EventID)
	}
	return out
}

// statusChanges returns org's published status changes in stream order, whether each came in
// a message.status_changed event of its own or with others in a messages.status_changed one.
func statusChanges(t *testing.T, rdb *redis.Client, org string) []*eventsv1.MessageStatusChanged {
	t.Helper()
	var out []*eventsv1.MessageStatusChanged
	for _, ev := range streamEvents(t, rdb, "messaging", "", org) {
		switch ev.Type {
		case "message.status_changed":
			out = append(out, decodeEvents[eventsv1.MessageStatusChanged](t, []streamEvent{ev})...)
		case "messages.status_changed":
			out = append(out, decodeEvents[eventsv1.MessagesStatusChanged](t, []streamEvent{ev})[0].GetChanges()...)
		}
	}
	return out
}

func TestEventsMessageReceivedIsPublished(t *testing.T) {
	t.Parallel()
	redisURL, rdb := redistest.New(t)
	e := newMsgEnv(t, map[string]string{"CHORUS_REDIS_URL": redisURL})
	tn := e.newTenant("+12025550100", 5)
	contactID := tn.contact("+12025550143", "Ada", true)

	e.text("+12025550100", "(202) 555-0143", "What time do you open tomorrow?")
	res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "We open at 9."})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	replyID := res.JSON(t)["messageLog"].(map[string]any)["id"].(string)
	answer, err := sandbox.Text{To: "+12025550100", From: "+12025550143", Body: "Yes please"}.Form()
	require.NoError(t, err)
	for range 2 { // the carrier retries: one message, one event
		require.Equal(t, http.StatusOK, e.postInbound(answer).Status)
	}
	e.text("+12025550100", "+12025550199", "who is this?", "https://media.example/1.jpg")

	// The relay publishes committed rows in the order they were written, and these were
	// written one after another: once the last message's event is there, a duplicate of the
	// retried one would be too.
	var got []*eventsv1.MessageReceived
	eventually(t, 10*time.Second, "the stranger's message.received", func() bool {
		got = decodeEvents[eventsv1.MessageReceived](t, streamEvents(t, rdb, "messaging", "message.received", tn.org))
		return slices.ContainsFunc(got, func(m *eventsv1.MessageReceived) bool { return m.GetFrom() == "+12025550199" })
	})
	require.Len(t, got, 3, "one event per stored inbound message")
	ids := map[string]bool{}
	for _, ev := range streamEvents(t, rdb, "messaging", "message.received", tn.org) {
		ids[ev.EventID] = true
	}
	assert.Len(t, ids, 3, "each event has its own id")

	thread := tn.thread("+12025550143") // newest first: answer, reply, question
	require.Len(t, thread, 3)
	byID := map[string]*eventsv1.MessageReceived{}
	for _, m := range got {
		assert.Equal(t, tn.org, m.GetOrganizationId())
		assert.Equal(t, "+12025550100", m.GetTo())
		byID[m.GetMessageId()] = m
	}

	question := byID[thread[2]["id"].(string)]
	require.NotNil(t, question, "the question's event carries its message id")
	assert.Equal(t, "+12025550143", question.GetFrom(), "the sender in E.164")
	assert.Equal(t, contactID, question.GetContactId())
	assert.Equal(t, "What time do you open tomorrow?", question.GetBody())
	assert.Empty(t, question.GetMediaUrls())
	assert.Equal(t, "question", question.GetCategory())
	assert.Equal(t, thread[2]["sentiment"], question.GetSentiment(), "the classification the thread shows")
	assert.InDelta(t, thread[2]["sentimentScore"].(float64), question.GetSentimentScore(), 1e-9)
	assert.False(t, question.GetOptOutDetected())
	at, err := time.Parse(time.RFC3339Nano, thread[2]["timestamp"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, at, question.GetReceivedAt().AsTime(), time.Millisecond)
	assert.Nil(t, question.GetAttribution(), "nothing was sent to the number before")

	ans := byID[thread[0]["id"].(string)]
	require.NotNil(t, ans)
	assert.Equal(t, "Yes please", ans.GetBody())
	assert.Equal(t, "affirmative", ans.GetCategory())
	assert.Equal(t, contactID, ans.GetContactId())
	require.NotNil(t, ans.GetAttribution(), "an answer names the message it answers")
	assert.Equal(t, replyID, ans.GetAttribution().GetMessageId())
	assert.Equal(t, "reply", ans.GetAttribution().GetSourceKind())
	assert.Empty(t, ans.GetAttribution().GetSourceId(), "a reply belongs to no campaign or poll")

	stranger := byID[tn.thread("+12025550199")[0]["id"].(string)]
	require.NotNil(t, stranger)
	assert.Empty(t, stranger.GetContactId(), "no contact has the number")
	assert.Equal(t, []string{"https://media.example/1.jpg"}, stranger.GetMediaUrls())
	assert.Nil(t, stranger.GetAttribution())

	// The reply's way to the phone is published too, each step once, with what it cost.
	var statuses []*eventsv1.MessageStatusChanged
	eventually(t, 10*time.Second, "the reply's delivery event", func() bool {
		statuses = nil
		for _, s := range statusChanges(t, rdb, tn.org) {
			if s.GetMessageId() == replyID {
				statuses = append(statuses, s)
			}
		}
		return slices.ContainsFunc(statuses, func(s *eventsv1.MessageStatusChanged) bool { return s.GetStatus() == "delivered" })
	})
	var steps []string
	for _, s := range statuses {
		steps = append(steps, s.GetStatus())
		assert.Equal(t, "+12025550143", s.GetTo())
		assert.Equal(t, "reply", s.GetSourceKind())
		assert.Equal(t, int32(1), s.GetCredits(), "one SMS segment")
		assert.Empty(t, s.GetErrorCode())
	}
	assert.ElementsMatch(t, []string{"sent", "delivered"}, steps)
}

func TestEventsContactDeletedDropsItsThread(t *testing.T) {
	t.Parallel()
	redisURL, _ := redistest.New(t)
	e := newMsgEnv(t, map[string]string{"CHORUS_REDIS_URL": redisURL})
	tn := e.newTenant("+12025550100", 5)
	other := e.newTenant("+12025550101", 0)
	id := tn.contact("+12025550143", "Ada", true)

	e.text("+12025550100", "+12025550143", "hello")
	res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "Menu: https://example.com/menu"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	link := regexp.MustCompile(`http://\S+/l/[0-9A-Za-z]{8}`).FindString(res.JSON(t)["messageLog"].(map[string]any)["message"].(string))
	require.NotEmpty(t, link)
	e.text("+12025550100", "+12025550143", "thanks")
	e.text("+12025550100", "+12025550144", "an unrelated thread")
	e.text("+12025550101", "+12025550143", "the same phone in another organization")
	noFollow := e.noFollow()
	follow := func() int {
		t.Helper()
		hit, err := noFollow.Get(link)
		require.NoError(t, err)
		hit.Body.Close()
		return hit.StatusCode
	}
	require.Equal(t, http.StatusFound, follow())

	res = tn.do("DELETE", "/api/contacts/"+id, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	eventually(t, 15*time.Second, "the deleted contact's thread dropped", func() bool {
		return threadItem(t, tn, "+12025550143") == nil
	})
	assert.Empty(t, tn.thread("+12025550143"), "its messages are gone; the number's thread is simply empty")
	res = tn.do("POST", "/api/conversations/%2B12025550143/read", nil)
	assert.Equal(t, http.StatusNotFound, res.Status, "no thread to read: %s", res.Body)
	assert.Empty(t, conversations(t, tn, "search=Ada&includeArchived=true"))
	assert.Equal(t, http.StatusNotFound, follow(), "links sent to the contact are gone with its messages")

	assert.Len(t, tn.thread("+12025550144"), 1, "other threads stay")
	theirs := other.thread("+12025550143")
	require.Len(t, theirs, 1, "another organization's thread with the same phone stays")
	assert.Equal(t, "the same phone in another organization", theirs[0]["message"])

	// A message after the deletion starts a new thread, with no contact behind it.
	e.text("+12025550100", "+12025550143", "hi again")
	item := threadItem(t, tn, "+12025550143")
	require.NotNil(t, item)
	assert.Equal(t, "", item["contactId"])
	assert.Equal(t, "hi again", item["lastMessage"])
	assert.Equal(t, 1.0, item["unreadCount"])
	msgs := tn.thread("+12025550143")
	require.Len(t, msgs, 1)
	assert.Equal(t, "hi again", msgs[0]["message"])
}

// TestEventsLateContactDeletedKeepsNewerMessages covers a contact.deleted that reaches messaging
// after the number texted again (Redis was away meanwhile): the messages from before the
// deletion go, the newer one stays, and the thread counts only what it still holds.
func TestEventsLateContactDeletedKeepsNewerMessages(t *testing.T) {
	t.Parallel()
	redisURL, rdb := redistest.New(t)
	e := newMsgEnv(t, map[string]string{"CHORUS_REDIS_URL": redisURL})
	tn := e.newTenant("+12025550100", 0)
	id := tn.contact("+12025550143", "Ada", false)
	e.text("+12025550100", "+12025550143", "one")
	e.text("+12025550100", "+12025550143", "two")

	// contacts' stream key holds a string: its relay cannot publish (nor messaging consume)
	// until the key is removed, and both retry.
	ctx := context.Background()
	stream := outbox.StreamName("contacts")
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, stream)
		p.Set(ctx, stream, "outage", 0)
		return nil
	})
	require.NoError(t, err)
	res := tn.do("DELETE", "/api/contacts/"+id, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	e.text("+12025550100", "+12025550143", "three")
	require.Len(t, tn.thread("+12025550143"), 3, "messaging has not heard of the deletion yet")
	require.NoError(t, rdb.Del(ctx, stream).Err())

	eventually(t, 30*time.Second, "the messages from before the deletion dropped", func() bool {
		return len(tn.thread("+12025550143")) == 1
	})
	assert.Equal(t, "three", tn.thread("+12025550143")[0]["message"])
	item := threadItem(t, tn, "+12025550143")
	require.NotNil(t, item, "the newer message keeps its thread")
	assert.Equal(t, "three", item["lastMessage"])
	assert.Equal(t, "", item["contactId"])
	assert.Equal(t, 1.0, item["unreadCount"], "unread counts only messages the thread still has")
}
