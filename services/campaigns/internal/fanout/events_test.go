package fanout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
	"github.com/chorus-sms/chorus/services/campaigns/migrations"
)

// A click on a campaign's short link counts for that campaign; a test copy's link, a reply's
// link and another organization's event naming the campaign count for none.
func TestLinkClicksCountForTheirCampaignOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...)
	st := store.New(pool)
	org, now := uuid.New(), time.Now()
	c := store.Campaign{ID: uuid.New(), OrgID: org, Name: "c", Status: store.StatusSending, Channel: "text", ForceRoute: "AUTO", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &c) }))

	handle := EventHandler(st, nil)
	click := func(org uuid.UUID, kind, source string) {
		payload, err := proto.Marshal(&eventsv1.LinkClicked{OrganizationId: org.String(), Code: "aB3dE5gH", SourceKind: kind, SourceId: source})
		require.NoError(t, err)
		m := outbox.Message{EventID: uuid.New(), Type: "link.clicked", OrgID: org, Payload: payload}
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return handle(ctx, tx, m) }))
	}
	click(org, "campaign", c.ID.String())
	click(org, "campaign", c.ID.String())
	click(org, "test", c.ID.String())
	click(org, "reply", "")
	click(uuid.New(), "campaign", c.ID.String())
	click(org, "campaign", uuid.NewString()) // a campaign that does not exist

	got, err := st.Get(ctx, org, c.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 2, got.ClickCount)
}

// A status event names its recipient's contact in the message's dedupe key; a key of another
// campaign, of another kind or malformed names none (the recipient is then found by phone).
func TestRecipientOfReadsTheDedupeKey(t *testing.T) {
	campaign, contact := uuid.New(), uuid.New()
	assert.Equal(t, contact, recipientOf(campaign, "campaign:"+campaign.String()+":"+contact.String()))
	for _, key := range []string{"", "campaign:" + uuid.NewString() + ":" + contact.String(), "auto_reply:" + contact.String(),
		"campaign:" + campaign.String() + ":", "campaign:" + campaign.String() + ":nope"} {
		assert.Equal(t, uuid.Nil, recipientOf(campaign, key), key)
	}
}

// A read's status events applied together (EventBatch) leave the recipients, the counters
// (the A/B samples' too) and the campaigns' completion as the same events applied one at a
// time do (EventHandler, the consumer's fallback), and as a model of the one-at-a-time rule
// computed here says: sent then delivered, sent then failed, sent then undelivered, a
// duplicate, a late sent, an older event found by phone (alone, and before a newer one for
// the same recipient), a withdrawn failure and the failure of a message sent in an earlier
// read, for two campaigns, among replies, a click, another organization's event and another
// source's.
func TestEventBatchAppliesStatusesAsOneByOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	org := uuid.New()
	x, y := uuid.New(), uuid.New()
	xs, ys := testRecipients(8, "+1202555100"), testRecipients(4, "+1202555200")
	xs[7].Unsendable = store.UnsentEmptyText
	started := time.Now().Add(-time.Hour)

	// seed stores campaign x (credits held) and A/B campaign y (decided, so it may complete;
	// ys[0] and ys[3] in sample A, ys[1] in B), both sending, with xs[6] sent in an earlier
	// read.
	seed := func(r *Runner, st *store.Store, pool *pgxpool.Pool) {
		a, b := "A", "B"
		for _, c := range []store.Campaign{
			{ID: x, OrgID: org, Name: "x", Status: store.StatusSending, Channel: "text", ForceRoute: "AUTO", HeldCredits: 3,
				StartedAt: &started, CreatedAt: started, UpdatedAt: started},
			{ID: y, OrgID: org, Name: "y", Status: store.StatusSending, Channel: "text", ForceRoute: "AUTO", IsAbTest: true,
				VariantA: &a, VariantB: &b, AbTestWaitMinutes: 60, StartedAt: &started, CreatedAt: started, UpdatedAt: started},
		} {
			require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &c) }))
		}
		require.NoError(t, st.AddRecipients(ctx, org, x, xs))
		require.NoError(t, st.AddRecipients(ctx, org, y, ys))
		for _, c := range []uuid.UUID{x, y} {
			_, _, err := st.ResolveAudience(ctx, org, c)
			require.NoError(t, err)
		}
		_, err := pool.Exec(ctx, `UPDATE recipients SET variant = CASE WHEN contact_id = $4 THEN 'B' ELSE 'A' END
			WHERE campaign_id = $1 AND contact_id IN ($2, $3, $4)`, y, ys[0].ContactID, ys[3].ContactID, ys[1].ContactID)
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO ab_tests (campaign_id, organization_id, a_recipients, b_recipients, winner, decided_at)
			VALUES ($1, $2, 2, 1, 'A', now())`, y, org)
		require.NoError(t, err)
		earlier := statusEvent(org, SourceKind, x, xs[6].ContactID, xs[6].Phone, "sent", "")
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return EventHandler(st, r)(ctx, tx, earlier) }))
	}

	byContact := func(c uuid.UUID, rc store.Recipient, status string) outbox.Message {
		return statusEvent(org, SourceKind, c, rc.ContactID, "+19999999999", status, "") // the phone is not read
	}
	byPhone := func(c uuid.UUID, rc store.Recipient, status string) outbox.Message {
		return statusEvent(org, SourceKind, c, uuid.Nil, rc.Phone, status, "")
	}
	read := []outbox.Message{
		byContact(x, xs[0], "sent"),
		byContact(y, ys[0], "sent"),
		byContact(x, xs[1], "sent"),
		replyEvent(org, x, xs[0]),
		byContact(x, xs[2], "sent"),
		statusEvent(org, "poll", x, xs[2].ContactID, xs[2].Phone, "failed", ""), // another source's
		byContact(x, xs[3], "delivered"),                                        // its sent comes late
		byPhone(x, xs[4], "sent"),                                               // published before events named the contact
		byContact(x, xs[0], "delivered"),
		statusEvent(org, SourceKind, x, xs[5].ContactID, xs[5].Phone, "failed", apierr.ReasonSourceCanceled), // withdrawn
		byContact(x, xs[1], "failed"),
		clickEvent(org, x),
		byContact(x, xs[2], "undelivered"),
		byContact(x, xs[3], "delivered"), // a duplicate
		byContact(x, xs[3], "sent"),
		byContact(x, xs[4], "delivered"),
		byContact(x, xs[6], "failed"),
		statusEvent(uuid.New(), SourceKind, x, xs[7].ContactID, xs[7].Phone, "delivered", ""), // another organization's
		byContact(uuid.New(), xs[0], "delivered"),                                             // no campaign's
		byContact(y, ys[1], "sent"),
		replyEvent(org, y, ys[0]),
		byContact(y, ys[0], "delivered"),
		byContact(y, ys[1], "failed"),
		byPhone(y, ys[2], "delivered"),
		byContact(y, ys[2], "failed"), // after its delivered: no move
		byContact(y, ys[0], "sent"),   // a duplicate, late
	}

	rBatch, stBatch, poolBatch := newRunner(t)
	seed(rBatch, stBatch, poolBatch)
	want := readOutcome(t, stBatch, poolBatch, org, x, y)
	modelApply(t, &want, org, read)

	// A read that fails as a whole (here a malformed event) leaves nothing behind; the
	// consumer then applies it event by event.
	bad := outbox.Message{EventID: uuid.New(), Type: eventStatusChanged, OrgID: org, Payload: []byte{0xff}}
	before := readOutcome(t, stBatch, poolBatch, org, x, y)
	assert.Error(t, stBatch.InTx(ctx, func(tx pgx.Tx) error {
		return EventBatch(stBatch, rBatch)(ctx, tx, append(slices.Clone(read), bad))
	}))
	assert.Equal(t, before, readOutcome(t, stBatch, poolBatch, org, x, y), "rolled back")

	require.NoError(t, stBatch.InTx(ctx, func(tx pgx.Tx) error { return EventBatch(stBatch, rBatch)(ctx, tx, read) }))
	batch := readOutcome(t, stBatch, poolBatch, org, x, y)

	rOne, stOne, poolOne := newRunner(t)
	seed(rOne, stOne, poolOne)
	h := EventHandler(stOne, rOne)
	for _, m := range read {
		require.NoError(t, stOne.InTx(ctx, func(tx pgx.Tx) error { return h(ctx, tx, m) }))
	}
	one := readOutcome(t, stOne, poolOne, org, x, y)

	assert.Equal(t, want, one, "one by one, as the model says")
	assert.Equal(t, want, batch, "together, as one by one")
	// And by hand: x's 0, 2, 3 and 4 are sent (2 undelivered), 1 and 6 failed (6 after it was
	// sent) and 7 unsendable, 5 withdrawn; y's 0 and 2 are delivered (0 in sample A), 1 failed
	// (sample B), 3 queued.
	assert.Equal(t, [5]int32{4, 3, 1, 3, 0}, counters(batch.Campaigns[x]))
	assert.Equal(t, store.StatusCompleted, batch.Campaigns[x].Status, "every recipient of x has an outcome")
	assert.Equal(t, [5]int32{2, 1, 0, 2, 1}, counters(batch.Campaigns[y]))
	assert.Equal(t, store.StatusSending, batch.Campaigns[y].Status, "ys[3] is still queued")
	assert.Equal(t, 1, batch.Releases, "x's hold")
}

// counters are c's sent, failed, withdrawn and delivered counters and its sample A's sent.
func counters(c campaignOutcome) [5]int32 {
	return [5]int32{c.Sent, c.Failed, c.Withdrawn, c.Delivered, c.ASent}
}

// testRecipients are n recipients of new contacts, phones prefix+i.
func testRecipients(n int, prefix string) []store.Recipient {
	rs := make([]store.Recipient, n)
	for i := range rs {
		rs[i] = store.Recipient{ContactID: uuid.New(), Phone: fmt.Sprintf("%s%d", prefix, i), Body: "hi", Credits: 1}
	}
	return rs
}

// statusEvent is messaging's status event of a message of source kind/campaign to contact
// (uuid.Nil: an event published before the dedupe key named the contact) or phone.
func statusEvent(org uuid.UUID, kind string, campaign, contact uuid.UUID, phone, status, errorCode string) outbox.Message {
	ev := &eventsv1.MessageStatusChanged{OrganizationId: org.String(), MessageId: uuid.NewString(), To: phone, Status: status,
		SourceKind: kind, SourceId: campaign.String(), ErrorCode: errorCode}
	if contact != uuid.Nil {
		ev.DedupeKey = dedupePrefix(campaign.String()) + contact.String()
	}
	return testMessage(eventStatusChanged, org, ev)
}

// replyEvent is a reply from rc attributed to campaign.
func replyEvent(org, campaign uuid.UUID, rc store.Recipient) outbox.Message {
	return testMessage(eventReceived, org, &eventsv1.MessageReceived{OrganizationId: org.String(), MessageId: uuid.NewString(),
		From: rc.Phone, ContactId: rc.ContactID.String(), Body: "thanks", ReceivedAt: timestamppb.Now(),
		Attribution: &eventsv1.Attribution{SourceKind: SourceKind, SourceId: campaign.String()}})
}

// clickEvent is a click on a short link of campaign.
func clickEvent(org, campaign uuid.UUID) outbox.Message {
	return testMessage(eventLinkClicked, org, &eventsv1.LinkClicked{OrganizationId: org.String(), Code: "aB3dE5gH", SourceKind: SourceKind, SourceId: campaign.String()})
}

func testMessage(typ string, org uuid.UUID, ev proto.Message) outbox.Message {
	payload, err := proto.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return outbox.Message{EventID: uuid.New(), Type: typ, OrgID: org, Payload: payload}
}

// outcome is what a read's events change: each campaign's status and counters (its A/B
// samples' too), each recipient's status and replied mark, and the hold releases queued.
type outcome struct {
	Campaigns  map[uuid.UUID]campaignOutcome
	Recipients map[[2]uuid.UUID]recipientOutcome // by campaign and contact
	Releases   int
}

type campaignOutcome struct {
	Status                                                  string
	Total, Sent, Failed, Withdrawn, Delivered, Reply, Click int32
	Held                                                    int32
	AbTest, Decided                                         bool
	ASent, BSent, AReplies, BReplies                        int32
}

type recipientOutcome struct {
	Phone, Status, Variant string
	Replied                bool
}

func readOutcome(t *testing.T, st *store.Store, pool *pgxpool.Pool, org uuid.UUID, campaigns ...uuid.UUID) outcome {
	t.Helper()
	ctx := context.Background()
	o := outcome{Campaigns: map[uuid.UUID]campaignOutcome{}, Recipients: map[[2]uuid.UUID]recipientOutcome{}}
	for _, id := range campaigns {
		c, err := st.Get(ctx, org, id)
		require.NoError(t, err)
		co := campaignOutcome{Status: c.Status, Total: c.TotalCount, Sent: c.SentCount, Failed: c.FailedCount, Withdrawn: c.WithdrawnCount,
			Delivered: c.DeliveredCount, Reply: c.ReplyCount, Click: c.ClickCount, Held: c.HeldCredits, AbTest: c.IsAbTest}
		if c.IsAbTest {
			require.NoError(t, pool.QueryRow(ctx, `SELECT a_sent, b_sent, a_replies, b_replies, winner IS NOT NULL FROM ab_tests WHERE campaign_id = $1`, id).
				Scan(&co.ASent, &co.BSent, &co.AReplies, &co.BReplies, &co.Decided))
		}
		o.Campaigns[id] = co
	}
	rows, err := pool.Query(ctx, `SELECT campaign_id, contact_id, phone, status, coalesce(variant, ''), replied FROM recipients`)
	require.NoError(t, err)
	var campaign, contact uuid.UUID
	var r recipientOutcome
	_, err = pgx.ForEachRow(rows, []any{&campaign, &contact, &r.Phone, &r.Status, &r.Variant, &r.Replied}, func() error {
		o.Recipients[[2]uuid.UUID{campaign, contact}] = r
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1`, releaseArgs{}.Kind()).Scan(&o.Releases))
	return o
}

// modelApply applies msgs to o one at a time by the rule the consumer keeps: a recipient's
// status only moves to a higher rank (queued; sent; delivered, undelivered or failed), each
// move moving the counters (a message counts as sent while sent, delivered or undelivered; a
// withdrawn failure counts as withdrawn); a campaign completes once it is sending and every
// recipient is sent, failed or withdrawn (an A/B test's also decided), queuing the release
// of its hold if it holds credits. Replies count, once per sample recipient for its sample;
// clicks count.
func modelApply(t *testing.T, o *outcome, org uuid.UUID, msgs []outbox.Message) {
	t.Helper()
	rank := map[string]int{"queued": 0, "sent": 1, "delivered": 2, "undelivered": 2, "failed": 2}
	for _, m := range msgs {
		switch m.Type {
		case eventReceived:
			var ev eventsv1.MessageReceived
			require.NoError(t, m.Unmarshal(&ev))
			id := uuid.MustParse(ev.GetAttribution().GetSourceId())
			c := o.Campaigns[id]
			c.Reply++
			k := [2]uuid.UUID{id, uuid.MustParse(ev.GetContactId())}
			if r := o.Recipients[k]; r.Variant != "" && !r.Replied {
				r.Replied = true
				o.Recipients[k] = r
				if r.Variant == "A" {
					c.AReplies++
				} else {
					c.BReplies++
				}
			}
			o.Campaigns[id] = c
			continue
		case eventLinkClicked:
			var ev eventsv1.LinkClicked
			require.NoError(t, m.Unmarshal(&ev))
			id := uuid.MustParse(ev.GetSourceId())
			c := o.Campaigns[id]
			c.Click++
			o.Campaigns[id] = c
			continue
		}
		var ev eventsv1.MessageStatusChanged
		require.NoError(t, m.Unmarshal(&ev))
		id := uuid.MustParse(ev.GetSourceId())
		c, ok := o.Campaigns[id]
		if !ok || m.OrgID != org || ev.GetSourceKind() != SourceKind {
			continue
		}
		var k [2]uuid.UUID
		if contact, found := strings.CutPrefix(ev.GetDedupeKey(), "campaign:"+id.String()+":"); found {
			k = [2]uuid.UUID{id, uuid.MustParse(contact)}
		} else {
			for rk, r := range o.Recipients {
				if rk[0] == id && r.Phone == ev.GetTo() {
					k = rk
				}
			}
		}
		r, ok := o.Recipients[k]
		if !ok || rank[ev.GetStatus()] <= rank[r.Status] {
			continue
		}
		before := r.Status
		r.Status = ev.GetStatus()
		o.Recipients[k] = r
		sent := int32(0)
		switch ev.GetStatus() {
		case "sent", "undelivered":
			if before != "sent" {
				sent = 1
			}
		case "delivered":
			c.Delivered++
			if before != "sent" {
				sent = 1
			}
		case "failed":
			if before == "sent" {
				sent = -1
			}
			if apierr.Withdrawn(ev.GetErrorCode()) {
				c.Withdrawn++
			} else {
				c.Failed++
			}
		}
		c.Sent += sent
		switch r.Variant {
		case "A":
			c.ASent += sent
		case "B":
			c.BSent += sent
		}
		if c.Status == store.StatusSending && c.Sent+c.Failed+c.Withdrawn >= c.Total && (!c.AbTest || c.Decided) {
			c.Status = store.StatusCompleted
			if c.Held > 0 {
				o.Releases++
			}
		}
		o.Campaigns[id] = c
	}
}
