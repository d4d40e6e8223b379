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
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/redistest"
	tenantmd "github.com/chorus-sms/chorus/pkg/tenant"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
)

// The SendMessages tests call messaging as campaigns and polls will: over gRPC, as a service
// acting for one organization. What a caller cannot see over REST is read where it is
// published: error codes and per-message credits in the message.status_changed events (what
// campaigns will consume), debits and holds in billing's ledger.

// bulkEnv is a messaging stack whose database and event streams the test can read.
type bulkEnv struct {
	*msgEnv
	dsn string
	rdb *redis.Client
}

func newBulkEnv(t *testing.T) *bulkEnv {
	t.Helper()
	dsn := stackDB.NewDatabase(t)
	redisURL, rdb := redistest.New(t)
	e := newMsgEnv(t, map[string]string{"CHORUS_DATABASE_URL": dsn, "CHORUS_REDIS_URL": redisURL})
	return &bulkEnv{msgEnv: e, dsn: dsn, rdb: rdb}
}

// asService is ctx carrying a service (campaigns) writing for tn's organization, the
// metadata peers.For attaches.
func asService(tn *tenant, access tenantmd.Access) context.Context {
	return tenantmd.AppendToOutgoing(context.Background(), tenantmd.Principal{
		OrgID: uuid.MustParse(tn.org), User: "service:campaigns", Access: access,
	})
}

// send calls SendMessages for tn's organization.
func (b *bulkEnv) send(tn *tenant, msgs ...*messagingv1.OutgoingMessage) (*messagingv1.SendMessagesResponse, error) {
	return b.messaging.SendMessages(asService(tn, tenantmd.AccessWrite), &messagingv1.SendMessagesRequest{Messages: msgs})
}

// mustSend sends msgs and returns their ids.
func (b *bulkEnv) mustSend(tn *tenant, msgs ...*messagingv1.OutgoingMessage) []string {
	b.t.Helper()
	res, err := b.send(tn, msgs...)
	require.NoError(b.t, err)
	require.Len(b.t, res.GetMessageIds(), len(msgs))
	return res.GetMessageIds()
}

// campaignMsg is one campaign message with its dedupe key.
func campaignMsg(key, to, body string) *messagingv1.OutgoingMessage {
	return &messagingv1.OutgoingMessage{DedupeKey: key, To: to, Body: body, SourceKind: "campaign", SourceId: "0190f0e0-0000-7000-8000-00000000c0de"}
}

// statusOf is the status the thread REST endpoint shows for message id ("" when absent).
func statusOf(tn *tenant, phone, id string) string {
	for _, m := range tn.thread(phone) {
		if m["id"] == id {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// awaitStatus waits until the thread shows message id with want.
func awaitStatus(tn *tenant, phone, id, want string) {
	t := tn.e.t
	t.Helper()
	eventually(t, 15*time.Second, fmt.Sprintf("message %s to %s %s (now %q)", id, phone, want, statusOf(tn, phone, id)), func() bool {
		return statusOf(tn, phone, id) == want
	})
}

// statusEvents returns org's published status changes by message id, oldest first.
func (b *bulkEnv) statusEvents(org string) map[string][]*eventsv1.MessageStatusChanged {
	b.t.Helper()
	evs := statusChanges(b.t, b.rdb, org)
	out := map[string][]*eventsv1.MessageStatusChanged{}
	for _, ev := range evs {
		out[ev.GetMessageId()] = append(out[ev.GetMessageId()], ev)
	}
	return out
}

// history is the statuses message id's events announced, in order.
func (b *bulkEnv) history(org, id string) []string {
	b.t.Helper()
	var out []string
	for _, e := range b.statusEvents(org)[id] {
		out = append(out, e.GetStatus())
	}
	return out
}

// lastEvent waits until message id's latest status event is want, and returns it.
func (b *bulkEnv) lastEvent(org, id, want string) *eventsv1.MessageStatusChanged {
	b.t.Helper()
	var last *eventsv1.MessageStatusChanged
	eventually(b.t, 10*time.Second, "status event "+want+" of "+id, func() bool {
		evs := b.statusEvents(org)[id]
		if len(evs) == 0 {
			return false
		}
		last = evs[len(evs)-1]
		return last.GetStatus() == want
	})
	return last
}

// ledger is what billing's ledger says of one organization.
type ledger struct {
	available int            // sum of available deltas: the balance
	held      int            // sum of held deltas: what open holds have left
	debits    map[string]int // credits debited, by message id
	holdRows  int            // holds placed
}

// storedStatus is a message's status as messaging stores it (the API does not show queued ones).
func (b *bulkEnv) storedStatus(id string) string {
	t := b.t
	t.Helper()
	ctx := context.Background()
	db, err := pgx.Connect(ctx, b.dsn)
	require.NoError(t, err)
	defer db.Close(ctx)
	var status string
	require.NoError(t, db.QueryRow(ctx, `SELECT status FROM messaging.messages WHERE id = $1`, id).Scan(&status))
	return status
}

func (b *bulkEnv) ledger(org string) ledger {
	t := b.t
	t.Helper()
	ctx := context.Background()
	db, err := pgx.Connect(ctx, b.dsn)
	require.NoError(t, err)
	defer db.Close(ctx)
	rows, err := db.Query(ctx, `SELECT kind, key, available_delta, held_delta, amount FROM billing.ledger WHERE organization_id = $1`, org)
	require.NoError(t, err)
	l := ledger{debits: map[string]int{}}
	var kind, key string
	var avail, held, amount int
	_, err = pgx.ForEachRow(rows, []any{&kind, &key, &avail, &held, &amount}, func() error {
		l.available += avail
		l.held += held
		switch kind {
		case "debit":
			l.debits[key] += amount
		case "refund": // a message the carrier failed after it was debited
			if l.debits[key] -= amount; l.debits[key] == 0 {
				delete(l.debits, key)
			}
		case "hold":
			l.holdRows++
		}
		return nil
	})
	require.NoError(t, err)
	return l
}

// requireField checks err is the VALIDATION_FAILED answer naming field.
func requireField(t *testing.T, err error, field string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	assert.Equal(t, apierr.ReasonValidation, apierr.Reason(err), "%v", err)
	assert.Contains(t, apierr.FieldViolations(err), field, "%v", err)
}

// spoilCase spoils one field of a message that is otherwise fine.
type spoilCase struct {
	name  string
	spoil func(m *messagingv1.OutgoingMessage)
	field string
}

// refusesSpoiled runs each case: send, given the spoiled message to `to`, must be refused
// naming the case's field.
func refusesSpoiled(t *testing.T, cases []spoilCase, to string, send func(bad *messagingv1.OutgoingMessage) error) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := campaignMsg("k-bad", to, "hello")
			tc.spoil(bad)
			requireField(t, send(bad), tc.field)
		})
	}
}

func TestBulkValidationRejectsTheWholeCall(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 10)
	other := b.newTenant("+12025550101", 10)
	const to = "+12025550143"
	tn.contact(to, "Ada", true)
	ok := campaignMsg("k-ok", to, "hello")

	tooMany := make([]*messagingv1.OutgoingMessage, 1001)
	for i := range tooMany {
		tooMany[i] = campaignMsg(fmt.Sprint("k-", i), to, "hello")
	}
	_, err := b.send(tn)
	requireField(t, err, "messages")
	_, err = b.send(tn, tooMany...)
	requireField(t, err, "messages")

	// Each case spoils the second message of a call whose first is fine: the call is refused
	// as a whole, naming the spoiled field.
	refusesSpoiled(t, []spoilCase{
		{"not a phone", func(m *messagingv1.OutgoingMessage) { m.To = "call me" }, "messages[1].to"},
		{"no body", func(m *messagingv1.OutgoingMessage) { m.Body = "" }, "messages[1].body"},
		{"no dedupe key", func(m *messagingv1.OutgoingMessage) { m.DedupeKey = "" }, "messages[1].dedupeKey"},
		{"unknown source kind", func(m *messagingv1.OutgoingMessage) { m.SourceKind = "newsletter" }, "messages[1].sourceKind"},
		{"a reply is no bulk send", func(m *messagingv1.OutgoingMessage) { m.SourceKind = "reply" }, "messages[1].sourceKind"},
		{"no source kind", func(m *messagingv1.OutgoingMessage) { m.SourceKind = "" }, "messages[1].sourceKind"},
		{"unknown timezone", func(m *messagingv1.OutgoingMessage) { m.QuietHoursTimezone = "Mars/Olympus_Mons" }, "messages[1].quietHoursTimezone"},
		{"unknown recipient timezone", func(m *messagingv1.OutgoingMessage) { m.RecipientTimezone = "Mars/Olympus_Mons" }, "messages[1].recipientTimezone"},
		{"number id not a UUID", func(m *messagingv1.OutgoingMessage) { m.FromPhoneNumberId = "42" }, "messages[1].fromPhoneNumberId"},
		{"hold id not a UUID", func(m *messagingv1.OutgoingMessage) { m.HoldId = "campaign-7" }, "messages[1].holdId"},
	}, to, func(bad *messagingv1.OutgoingMessage) error {
		_, err := b.send(tn, ok, bad)
		return err
	})

	// Another organization's number answers exactly as a number nobody has.
	for name, id := range map[string]string{"another org's number": other.numberID, "unknown number": "0190f0e0-0000-7000-8000-000000000000"} {
		bad := campaignMsg("k-bad", to, "hello")
		bad.FromPhoneNumberId = id
		_, err := b.send(tn, ok, bad)
		assert.Equal(t, codes.PermissionDenied, status.Code(err), "%s: %v", name, err)
		assert.Equal(t, "FORBIDDEN", apierr.Reason(err), name)
	}

	// Only a writer of an organization may send for it.
	_, err = b.messaging.SendMessages(asService(tn, tenantmd.AccessRead), &messagingv1.SendMessagesRequest{Messages: []*messagingv1.OutgoingMessage{ok}})
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	_, err = b.messaging.SendMessages(context.Background(), &messagingv1.SendMessagesRequest{Messages: []*messagingv1.OutgoingMessage{ok}})
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "no organization on the call: %v", err)

	assert.Empty(t, tn.thread(to), "no refused call stored a message")
	assert.Empty(t, conversations(t, tn, ""), "no refused call opened a thread")
	time.Sleep(500 * time.Millisecond) // a message wrongly queued would be dispatched by now
	assert.Equal(t, 10.0, tn.balance())
	assert.Empty(t, b.statusEvents(tn.org))

	// The same message on its own is taken: the refusals above were for the spoiled ones.
	ids := b.mustSend(tn, ok)
	awaitStatus(tn, to, ids[0], "delivered")
}

// A bulk batch (how campaigns queue their audience) is one source's messages to E.164
// numbers, alike but for their recipient and text; it answers without ids, and its messages
// are created when due, once per dedupe key however often the batch is handed over, also
// through the deprecated SendMessages bulk flag (an older campaigns replica's, in a rolling
// update).
func TestBulkBatch(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 10)
	const to, other = "+12025550144", "+12025550145"
	tn.contact(to, "Ada", true)
	tn.contact(other, "Grace", true)
	ctx := asService(tn, tenantmd.AccessWrite)
	bulk := func(msgs ...*messagingv1.OutgoingMessage) (*messagingv1.QueueBulkResponse, error) {
		return b.messaging.QueueBulk(ctx, &messagingv1.QueueBulkRequest{Messages: msgs})
	}
	refusesSpoiled(t, []spoilCase{
		{"not E.164", func(m *messagingv1.OutgoingMessage) { m.To = "(202) 555-0145" }, "messages[1].to"},
		{"a test copy", func(m *messagingv1.OutgoingMessage) { m.SourceKind = "test" }, "messages[1].sourceKind"},
		{"another source", func(m *messagingv1.OutgoingMessage) { m.SourceId = "0190f0e0-0000-7000-8000-00000000beef" }, "messages[1].sourceId"},
		{"another hold", func(m *messagingv1.OutgoingMessage) { m.HoldId = "0190f0e0-0000-7000-8000-00000000beef" }, "messages[1].holdId"},
		{"another quiet-hours zone", func(m *messagingv1.OutgoingMessage) { m.QuietHoursTimezone = "Asia/Tokyo" }, "messages[1].quietHoursTimezone"},
	}, other, func(bad *messagingv1.OutgoingMessage) error {
		_, err := bulk(campaignMsg("b-1", to, "hello"), bad)
		return err
	})

	batch := []*messagingv1.OutgoingMessage{campaignMsg("b-1", to, "hello"), campaignMsg("b-2", other, "hello")}
	_, err := bulk(batch...)
	require.NoError(t, err)
	res, err := b.messaging.SendMessages(ctx, &messagingv1.SendMessagesRequest{Messages: batch, Bulk: true}) // handed over again
	require.NoError(t, err)
	assert.Empty(t, res.GetMessageIds())
	for _, ph := range []string{to, other} {
		eventually(t, 15*time.Second, "the bulk message to "+ph+" delivered", func() bool {
			th := tn.thread(ph)
			return len(th) == 1 && th[0]["status"] == "delivered"
		})
	}
	time.Sleep(500 * time.Millisecond)
	for _, ph := range []string{to, other} {
		assert.Len(t, tn.thread(ph), 1, "one message to %s", ph)
	}
}

// The bulk hand-off: an opened source's batches wait until it is released, and a canceled
// one's are dropped, never sent; only campaigns and polls hand off in bulk.
func TestBulkHandOff(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 10)
	const to, other = "+12025550146", "+12025550147"
	tn.contact(to, "Ada", true)
	tn.contact(other, "Grace", true)
	ctx := asService(tn, tenantmd.AccessWrite)
	released, canceled := campaignMsg("h-1", to, "hello"), campaignMsg("h-2", other, "hello")
	canceled.SourceId = "0190f0e0-0000-7000-8000-00000000dead"
	sources := map[*messagingv1.OutgoingMessage]*messagingv1.BulkSource{}
	for _, m := range []*messagingv1.OutgoingMessage{released, canceled} {
		sources[m] = &messagingv1.BulkSource{SourceKind: m.GetSourceKind(), SourceId: m.GetSourceId()}
		_, err := b.messaging.OpenBulk(ctx, &messagingv1.OpenBulkRequest{Source: sources[m]})
		require.NoError(t, err)
		_, err = b.messaging.QueueBulk(ctx, &messagingv1.QueueBulkRequest{Messages: []*messagingv1.OutgoingMessage{m}})
		require.NoError(t, err)
	}
	time.Sleep(time.Second) // an expanded batch would have been sent by now
	assert.Empty(t, tn.thread(to), "held until released")

	_, err := b.messaging.CancelBulk(ctx, &messagingv1.CancelBulkRequest{Source: sources[canceled]})
	require.NoError(t, err)
	_, err = b.messaging.ReleaseBulk(ctx, &messagingv1.ReleaseBulkRequest{Source: sources[released]})
	require.NoError(t, err)
	eventually(t, 15*time.Second, "the released message delivered", func() bool {
		th := tn.thread(to)
		return len(th) == 1 && th[0]["status"] == "delivered"
	})
	assert.Empty(t, tn.thread(other), "the canceled batch is never sent")

	_, err = b.messaging.OpenBulk(ctx, &messagingv1.OpenBulkRequest{Source: &messagingv1.BulkSource{SourceKind: "test", SourceId: "x"}})
	requireField(t, err, "source.sourceKind")
}

func TestBulkDedupeKeyQueuesOnce(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 10)
	other := b.newTenant("+12025550101", 10)
	const to = "+12025550143"
	tn.contact(to, "Ada", true)
	other.contact(to, "Ada", true)

	first := b.mustSend(tn, campaignMsg("campaign:1:ada", to, "Doors open at 9"))
	awaitStatus(tn, to, first[0], "delivered")

	// The campaign retries its call, and a buggy one lists the message twice: nothing is queued
	// again, every copy answers the stored message's id.
	again := b.mustSend(tn, campaignMsg("campaign:1:ada", to, "Doors open at 9"), campaignMsg("campaign:1:ada", "(202) 555-0143", "Doors open at 9!"))
	assert.Equal(t, []string{first[0], first[0]}, again)

	// The key is the organization's own: another organization's message with it is sent.
	theirs := b.mustSend(other, campaignMsg("campaign:1:ada", to, "Doors open at 9"))
	assert.NotEqual(t, first[0], theirs[0])
	awaitStatus(other, to, theirs[0], "delivered")

	time.Sleep(time.Second) // a second copy would have been dispatched by now
	msgs := tn.thread(to)
	require.Len(t, msgs, 1, "the recipient got one message")
	assert.Equal(t, "Doors open at 9", msgs[0]["message"], "the stored message is the first call's")
	assert.Equal(t, "delivered", msgs[0]["status"])
	assert.Equal(t, 9.0, tn.balance(), "one message, one credit")
	assert.Equal(t, map[string]int{first[0]: 1}, b.ledger(tn.org).debits)
	assert.Len(t, other.thread(to), 1)
}

func TestBulkDeliversAndDebitsTheOrgsOwnHolds(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 20)
	sends := []struct {
		to, body, media string
		credits         int
	}{
		{"+12025550143", "Sale starts Friday", "", 1},
		{"+12025550144", strings.Repeat("a", 481), "", 2},                      // one character into a second segment
		{"+12025550145", strings.Repeat("é", 480), "", 1},                      // characters, not bytes
		{"+12025550146", "See you there", "https://example.com/poster.png", 2}, // MMS
	}
	var msgs []*messagingv1.OutgoingMessage
	for i, s := range sends {
		tn.contact(s.to, fmt.Sprint("Guest", i), true)
		m := campaignMsg(fmt.Sprint("campaign:2:", i), s.to, s.body)
		m.MediaUrl = s.media
		msgs = append(msgs, m)
	}
	ids := b.mustSend(tn, msgs...)

	want := map[string]int{}
	total := 0
	for i, s := range sends {
		awaitStatus(tn, s.to, ids[i], "delivered")
		want[ids[i]] = s.credits
		total += s.credits
		ev := b.lastEvent(tn.org, ids[i], "delivered")
		assert.EqualValues(t, s.credits, ev.GetCredits(), "the event says what message %d cost", i)
		assert.Equal(t, "campaign", ev.GetSourceKind())
		assert.Equal(t, msgs[i].GetSourceId(), ev.GetSourceId())
		assert.Equal(t, s.to, ev.GetTo())
	}
	require.Equal(t, 6, total)
	assert.Equal(t, float64(20-total), tn.balance())
	l := b.ledger(tn.org)
	assert.Equal(t, want, l.debits, "one debit per delivered message, at its price")
	assert.Equal(t, 20-total, l.available, "the balance is what the ledger adds up to")
	assert.Equal(t, 0, l.held, "every message's own hold was settled")
}

// A destination the carrier reports failed (sandbox 0006) was not successfully dispatched,
// so it costs nothing (spec: credits are consumed when a message is successfully dispatched;
// the status event already says 0 credits).
func TestBulkCarrierFailureCostsNothing(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 5)
	const failing, fine = "+12025550006", "+12025550143"
	tn.contact(failing, "Fay", true)
	tn.contact(fine, "Ada", true)
	ids := b.mustSend(tn, campaignMsg("campaign:3:fay", failing, "hello"), campaignMsg("campaign:3:ada", fine, "hello"))

	awaitStatus(tn, failing, ids[0], "failed")
	awaitStatus(tn, fine, ids[1], "delivered")
	ev := b.lastEvent(tn.org, ids[0], "failed")
	assert.EqualValues(t, 0, ev.GetCredits(), "the event says the failed message cost nothing")
	l := b.ledger(tn.org)
	assert.Equal(t, map[string]int{ids[1]: 1}, l.debits, "the ledger agrees with the event")
	assert.Equal(t, 4.0, tn.balance(), "only the delivered message is paid for")
	assert.Equal(t, 4, l.available)
	assert.Equal(t, 0, l.held)
}

func TestBulkCampaignHoldIsPostedOncePerMessageAndReleased(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 20)
	recipients := []string{"+12025550143", "+12025550144", "+12025550145"}
	for i, to := range recipients {
		tn.contact(to, fmt.Sprint("Guest", i), true)
	}
	const stranger = "+12025550150" // no contact: not sent, not paid for

	// The campaign holds its estimate before it queues anything.
	campaign := asService(tn, tenantmd.AccessWrite)
	hold := uuid.NewString()
	placed, err := b.billing.PlaceHold(campaign, &billingv1.PlaceHoldRequest{HoldId: hold, Credits: 10})
	require.NoError(t, err)
	assert.EqualValues(t, 10, placed.GetCredits().GetAvailable())

	msgs := []*messagingv1.OutgoingMessage{
		campaignMsg("campaign:4:0", recipients[0], "short"),
		campaignMsg("campaign:4:1", recipients[1], strings.Repeat("b", 500)),
		campaignMsg("campaign:4:2", recipients[2], "a picture"),
		campaignMsg("campaign:4:3", stranger, "hello"),
	}
	msgs[2].MediaUrl = "https://example.com/a.png"
	for _, m := range msgs {
		m.HoldId = hold
	}
	ids := b.mustSend(tn, msgs...)
	for i, to := range recipients {
		awaitStatus(tn, to, ids[i], "delivered")
	}
	// No contact has the stranger's number: the message is withdrawn, in no thread.
	assert.Equal(t, "CONTACT_NOT_FOUND", b.lastEvent(tn.org, ids[3], "failed").GetErrorCode())
	assert.Empty(t, statusOf(tn, stranger, ids[3]))
	b.lastEvent(tn.org, ids[2], "delivered")

	assert.Equal(t, 10.0, tn.balance(), "posting against the hold leaves the balance alone")
	l := b.ledger(tn.org)
	assert.Equal(t, map[string]int{ids[0]: 1, ids[1]: 2, ids[2]: 2}, l.debits, "each delivered message posted once, at its price")
	assert.Equal(t, 1, l.holdRows, "no message placed a hold of its own")
	assert.Equal(t, 5, l.held, "the hold has what was not posted")

	released, err := b.billing.ReleaseHold(campaign, &billingv1.ReleaseHoldRequest{HoldId: hold})
	require.NoError(t, err)
	assert.EqualValues(t, 5, released.GetReturned())
	assert.EqualValues(t, 0, released.GetHold().GetRemaining())
	assert.True(t, released.GetHold().GetReleased())
	assert.Equal(t, 15.0, tn.balance(), "20 granted, 5 spent")
	l = b.ledger(tn.org)
	assert.Equal(t, 15, l.available)
	assert.Equal(t, 0, l.held)
}

// A message whose campaign hold cannot pay for it (released when the campaign was cancelled,
// used up, or another organization's) must not go out for free: it either fails or is paid.
func TestBulkHoldThatCannotPaySendsNothingForFree(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 10)
	other := b.newTenant("+12025550101", 10)
	campaign, theirs := asService(tn, tenantmd.AccessWrite), asService(other, tenantmd.AccessWrite)
	released, exhausted, foreign := uuid.NewString(), uuid.NewString(), uuid.NewString()
	for _, h := range []struct {
		ctx     context.Context
		id      string
		credits int32
	}{{campaign, released, 2}, {campaign, exhausted, 1}, {theirs, foreign, 5}} {
		_, err := b.billing.PlaceHold(h.ctx, &billingv1.PlaceHoldRequest{HoldId: h.id, Credits: h.credits})
		require.NoError(t, err)
	}
	_, err := b.billing.ReleaseHold(campaign, &billingv1.ReleaseHoldRequest{HoldId: released})
	require.NoError(t, err)

	sends := []struct{ to, hold, body string }{
		{"+12025550143", released, "hello"},
		{"+12025550144", exhausted, strings.Repeat("d", 481)}, // 2 credits on a 1-credit hold
		{"+12025550145", foreign, "hello"},
	}
	var msgs []*messagingv1.OutgoingMessage
	for i, s := range sends {
		tn.contact(s.to, fmt.Sprint("Guest", i), true)
		m := campaignMsg(fmt.Sprint("campaign:5:", i), s.to, s.body)
		m.HoldId = s.hold
		msgs = append(msgs, m)
	}
	ids := b.mustSend(tn, msgs...)
	for i, s := range sends {
		eventually(t, 10*time.Second, "message "+s.to+" settles", func() bool {
			st := statusOf(tn, s.to, ids[i])
			return st == "failed" || st == "delivered"
		})
	}
	l := b.ledger(tn.org)
	for i, s := range sends {
		if statusOf(tn, s.to, ids[i]) == "delivered" {
			assert.Contains(t, l.debits, ids[i], "message to %s went out, so it was paid for", s.to)
		} else {
			assert.NotContains(t, l.debits, ids[i], "refused message to %s cost nothing", s.to)
		}
	}
	assert.Equal(t, float64(l.available), tn.balance(), "the balance is what the ledger adds up to")
	assert.Equal(t, 5, b.ledger(other.org).held, "another organization's hold is not ours to spend")
}

func TestBulkConsentIsCheckedAtDispatch(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 10)
	const optedOut, landline, stranger, fine = "+12025550143", "+12025550002", "+12025550150", "+12025550144"
	tn.contact(optedOut, "Otto", true)
	tn.contact(landline, "Lana", true)
	tn.contact(fine, "Ada", true)
	b.text(tn.number, optedOut, "STOP")
	eventually(t, 10*time.Second, "opt-out confirmed", func() bool {
		msgs := tn.thread(optedOut)
		return len(msgs) == 2 && msgs[0]["status"] == "delivered"
	})
	require.Equal(t, 10.0, tn.balance(), "the confirmation is free")

	ids := b.mustSend(tn,
		campaignMsg("campaign:6:otto", optedOut, "hello"),
		campaignMsg("campaign:6:lana", landline, "hello"),
		campaignMsg("campaign:6:stranger", stranger, "hello"),
		campaignMsg("campaign:6:ada", fine, "hello"),
	)
	awaitStatus(tn, fine, ids[3], "delivered")
	for i, to := range []string{optedOut, landline, stranger} {
		ev := b.lastEvent(tn.org, ids[i], "failed")
		code := map[string]string{
			optedOut: "CONTACT_OPTED_OUT", // opted out while the message waited
			landline: "NOT_SENDABLE",
			stranger: "CONTACT_NOT_FOUND", // no contact has the number (say, deleted while it waited)
		}[to]
		assert.Equal(t, code, ev.GetErrorCode(), to)
		assert.Equal(t, "failed", b.storedStatus(ids[i]), to)
		if apierr.Withdrawn(code) {
			assert.Empty(t, statusOf(tn, to, ids[i]), "%s: a withdrawn message is in no thread", to)
		} else {
			assert.Equal(t, "failed", statusOf(tn, to, ids[i]), to)
		}
		assert.EqualValues(t, 0, ev.GetCredits(), to)
		assert.Equal(t, []string{"failed"}, b.history(tn.org, ids[i]), "%s never reached the carrier", to)
	}
	assert.Equal(t, 9.0, tn.balance(), "only the sendable message is paid for")
	l := b.ledger(tn.org)
	assert.Equal(t, map[string]int{ids[3]: 1}, l.debits)
	assert.Equal(t, 1, l.holdRows, "no credits were even held for the refused ones")
	assert.Equal(t, 9, l.available)
}

// zoneWhere returns an Etc/GMT±N zone whose local hour now is hour.
func zoneWhere(hour int) string {
	east := ((hour-time.Now().UTC().Hour())%24 + 24) % 24
	if east > 14 { // Etc zones run from 12 hours west to 14 hours east
		east -= 24
	}
	name := "Etc/GMT"
	if east != 0 {
		name = fmt.Sprintf("Etc/GMT%+d", -east) // POSIX signs: Etc/GMT-3 is 3 hours east
	}
	return name
}

// localHour is the hour in zone now.
func localHour(t *testing.T, zone string) int {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	require.NoError(t, err)
	return time.Now().In(loc).Hour()
}

func TestBulkQuietHoursHoldMessagesUntilMorning(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 10)
	const sleeper, waker = "+12025550143", "+12025550144"
	tn.contact(sleeper, "Nox", true)
	tn.contact(waker, "Dia", true)
	night, day := zoneWhere(2), zoneWhere(14)
	require.True(t, localHour(t, night) < 8 || localHour(t, night) >= 21, "%s is at night", night)
	require.True(t, localHour(t, day) >= 8 && localHour(t, day) < 21, "%s is in the day", day)

	atNight := campaignMsg("campaign:7:nox", sleeper, "good morning")
	atNight.QuietHoursTimezone = night
	inDay := campaignMsg("campaign:7:dia", waker, "good afternoon")
	inDay.QuietHoursTimezone = day
	ids := b.mustSend(tn, atNight, inDay)

	awaitStatus(tn, waker, ids[1], "delivered")
	time.Sleep(2 * time.Second)
	assert.Equal(t, "queued", b.storedStatus(ids[0]), "it is %d:00 in %s", localHour(t, night), night)
	assert.Empty(t, statusOf(tn, sleeper, ids[0]), "a queued message is not in the thread yet")
	assert.Empty(t, b.history(tn.org, ids[0]), "nothing happened to the night message")
	assert.Equal(t, 9.0, tn.balance(), "the waiting message holds no credits")
	l := b.ledger(tn.org)
	assert.Equal(t, map[string]int{ids[1]: 1}, l.debits)
	assert.Equal(t, 0, l.held)
}

func TestBulkInsufficientCreditsFailsTheMessage(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 1)
	const to = "+12025550143"
	tn.contact(to, "Ada", true)

	ids := b.mustSend(tn, campaignMsg("campaign:8:ada", to, strings.Repeat("c", 600)))
	awaitStatus(tn, to, ids[0], "failed")
	ev := b.lastEvent(tn.org, ids[0], "failed")
	assert.Equal(t, "INSUFFICIENT_CREDITS", ev.GetErrorCode())
	assert.EqualValues(t, 0, ev.GetCredits())
	assert.Equal(t, []string{"failed"}, b.history(tn.org, ids[0]), "never handed to the carrier")
	assert.Equal(t, 1.0, tn.balance(), "the one credit is untouched")
	l := b.ledger(tn.org)
	assert.Empty(t, l.debits)
	assert.Equal(t, 0, l.holdRows)
	assert.Equal(t, 1, l.available)
}

// One SendMessages call whose messages the dispatcher takes off the queue together, so that
// their reads, consent checks, hold posts, claims and acceptances share batches: each message
// is still judged on its own. The opted-out recipient's and the deleted contact's messages
// fail before the carrier and cost nothing, the one whose hold cannot pay fails
// HOLD_EXHAUSTED, and every other message reaches the carrier once and is debited once.
func TestBulkBatchJudgesEachMessageOnItsOwn(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 20)
	const optedOut, deleted, poor = "+12025550143", "+12025550144", "+12025550145"
	fine := []string{"+12025550146", "+12025550147", "+12025550148", "+12025550149"}
	for i, to := range append([]string{optedOut, deleted, poor}, fine...) {
		tn.contact(to, fmt.Sprint("Guest", i), true)
	}
	b.text(tn.number, optedOut, "STOP")
	eventually(t, 10*time.Second, "opt-out confirmed", func() bool {
		msgs := tn.thread(optedOut)
		return len(msgs) == 2 && msgs[0]["status"] == "delivered"
	})
	gone := tn.do("GET", "/api/contacts?search="+url.QueryEscape(deleted), nil).JSON(t)["contacts"].([]any)[0].(map[string]any)["id"].(string)
	require.Equal(t, http.StatusOK, tn.do("DELETE", "/api/contacts/"+gone, nil).Status)

	campaign := asService(tn, tenantmd.AccessWrite)
	hold, small := uuid.NewString(), uuid.NewString()
	for id, credits := range map[string]int32{hold: 6, small: 1} {
		_, err := b.billing.PlaceHold(campaign, &billingv1.PlaceHoldRequest{HoldId: id, Credits: credits})
		require.NoError(t, err)
	}
	msgs := []*messagingv1.OutgoingMessage{
		campaignMsg("campaign:9:otto", optedOut, "hello"),
		campaignMsg("campaign:9:gone", deleted, "hello"),
		campaignMsg("campaign:9:poor", poor, strings.Repeat("p", 481)), // 2 credits on a 1-credit hold
	}
	for i, to := range fine {
		msgs = append(msgs, campaignMsg(fmt.Sprint("campaign:9:", i), to, "hello"))
	}
	for _, m := range msgs {
		m.HoldId = hold
	}
	msgs[2].HoldId = small
	ids := b.mustSend(tn, msgs...)

	for i, to := range fine {
		awaitStatus(tn, to, ids[3+i], "delivered")
	}
	for i, code := range []string{"CONTACT_OPTED_OUT", "CONTACT_NOT_FOUND", "HOLD_EXHAUSTED"} {
		ev := b.lastEvent(tn.org, ids[i], "failed")
		assert.Equal(t, code, ev.GetErrorCode(), msgs[i].GetTo())
		assert.EqualValues(t, 0, ev.GetCredits(), msgs[i].GetTo())
		assert.Equal(t, []string{"failed"}, b.history(tn.org, ids[i]), "%s never reached the carrier", msgs[i].GetTo())
	}
	for i := range fine {
		b.lastEvent(tn.org, ids[3+i], "delivered")
		assert.Equal(t, []string{"sent", "delivered"}, b.history(tn.org, ids[3+i]), "handed to the carrier once")
	}
	l := b.ledger(tn.org)
	want := map[string]int{}
	for i := range fine {
		want[ids[3+i]] = 1
	}
	assert.Equal(t, want, l.debits, "each sent message debited once, the refused ones not at all")
	assert.Equal(t, 2+1, l.held, "what the holds have left: 6-4 and the small hold's 1")
}
