package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
	"github.com/chorus-sms/chorus/services/messaging/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func newStore(t *testing.T) *store.Store {
	t.Helper()
	return store.New(newPool(t))
}

// newPool is a pool on a new database with the messaging schema migrated.
func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, pgtest.NewDatabase(t), "messaging")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgdb.Migrate(ctx, pool, "messaging", migrations.FS, migrations.With...))
	return pool
}

func outgoing(org uuid.UUID, to string) *store.Message {
	return &store.Message{
		ID: uuid.Must(uuid.NewV7()), OrgID: org, Direction: store.Outgoing, ContactPhone: to, OurNumber: "+12025550100",
		Body: "hello", Status: store.StatusSending, Provider: "sandbox", SourceKind: store.SourceReply, CreatedAt: time.Now(),
	}
}

// Carriers repeat and reorder callbacks; a status only replaces one that comes before it.
func TestStatusOnlyMovesForward(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	org := uuid.New()
	m := outgoing(org, "+12025550143")
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { _, err := st.InsertOutgoing(ctx, tx, m); return err }))

	apply := func(status, pid string) bool {
		var changed bool
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			_, changed, err = st.AdvanceStatus(ctx, tx, m.ID, store.StatusChange{Status: status, ProviderMessageID: pid, At: time.Now()})
			return err
		}))
		return changed
	}
	assert.True(t, apply("delivered", "SM1"), "a lost acceptance is repaired by the final status")
	assert.False(t, apply("sent", "SM2"))
	assert.False(t, apply("delivered", ""))
	assert.False(t, apply("failed", ""), "one final status is final")
	got, err := st.Message(ctx, org, m.ID)
	require.NoError(t, err)
	assert.Equal(t, "delivered", got.Status)
	assert.Equal(t, "SM1", got.ProviderMessageID, "the first carrier id sticks")
	assert.NotNil(t, got.SentAt)

	_, err = st.Message(ctx, uuid.New(), m.ID)
	assert.ErrorIs(t, err, store.ErrNotFound, "another organization's message is missing")
}

func TestIncomingIsStoredOncePerCarrierIDAndCountsUnread(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	org := uuid.New()
	in := func(body string) bool {
		m := &store.Message{ID: uuid.Must(uuid.NewV7()), OrgID: org, Direction: store.Incoming, ContactPhone: "+12025550143",
			OurNumber: "+12025550100", Body: body, Provider: "sandbox", ProviderMessageID: "SMx", CreatedAt: time.Now()}
		var inserted bool
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			inserted, err = st.InsertIncoming(ctx, tx, m)
			return err
		}))
		return inserted
	}
	assert.True(t, in("first"))
	assert.False(t, in("first"))
	list, err := st.Conversations(ctx, org, store.ConversationFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.EqualValues(t, 1, list[0].UnreadCount)
	assert.Equal(t, store.Incoming, list[0].LastDirection)

	archived := true
	_, err = st.UpdateConversation(ctx, org, "+12025550143", &archived, nil)
	require.NoError(t, err)
	list, err = st.Conversations(ctx, org, store.ConversationFilter{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, list, "archived threads are hidden by default")
	list, err = st.Conversations(ctx, org, store.ConversationFilter{Limit: 10, IncludeArchived: true})
	require.NoError(t, err)
	assert.Len(t, list, 1)
}

func TestNumbersBelongToOneOrganizationWithOneDefault(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	a, b := uuid.New(), uuid.New()
	first, err := st.AddNumber(ctx, a, "+12025550100", false)
	require.NoError(t, err)
	assert.True(t, first.IsDefault, "the first number is the default")
	second, err := st.AddNumber(ctx, a, "+12025550101", false)
	require.NoError(t, err)
	assert.False(t, second.IsDefault)
	second, err = st.AddNumber(ctx, a, "+12025550101", true)
	require.NoError(t, err)
	assert.True(t, second.IsDefault)
	def, err := st.DefaultNumber(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, second.ID, def.ID)

	_, err = st.AddNumber(ctx, b, "+12025550100", true)
	assert.ErrorIs(t, err, store.ErrNumberTaken)
	_, err = st.Number(ctx, b, first.ID)
	assert.ErrorIs(t, err, store.ErrNotFound)
}

// A number's own rate is stored with it and read with its queued messages; another
// organization's number cannot be given a rate (it is missing to that organization), and a
// number re-added keeps its rate.
func TestNumberRateIsStoredPerNumber(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	a, b := uuid.New(), uuid.New()
	n, err := st.AddNumber(ctx, a, "+12025550100", false)
	require.NoError(t, err)
	assert.Zero(t, n.MPS, "a new number has no rate of its own: the default applies")
	require.NoError(t, st.SetNumberRate(ctx, a, n.ID, 3))
	assert.ErrorIs(t, st.SetNumberRate(ctx, b, n.ID, 7), store.ErrNotFound)
	n, err = st.AddNumber(ctx, a, "+12025550100", false)
	require.NoError(t, err)
	assert.Equal(t, 3, n.MPS)
	got, err := st.Number(ctx, a, n.ID)
	require.NoError(t, err)
	assert.Equal(t, 3, got.MPS)

	m := &store.Message{ID: uuid.Must(uuid.NewV7()), OrgID: a, Direction: store.Outgoing, ContactPhone: "+12025550143",
		OurNumber: n.Number, Body: "hi", Status: store.StatusQueued, Provider: "twilio", SourceKind: store.SourceCampaign,
		SourceID: "c1", CreatedAt: time.Now()}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { _, err := st.InsertOutgoing(ctx, tx, m); return err }))
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		return st.SetSourceState(ctx, tx, a, store.SourceCampaign, "c1", store.SourcePaused)
	}))
	queued, err := st.QueuedMessages(ctx, []uuid.UUID{m.ID, uuid.New()})
	require.NoError(t, err)
	require.Len(t, queued, 1, "a missing id is absent")
	assert.Equal(t, 3, queued[m.ID].NumberMPS)
	assert.Equal(t, store.SourcePaused, queued[m.ID].SourceState)
}

// A batch is stored in one statement: a dedupe key used before, or twice in the batch, stores
// one message and answers its id. Queued messages join their threads when claimed; each thread
// then shows its newest message.
func TestOutgoingBatchDeduplicatesAndMovesEachThreadOnce(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	org, other := uuid.New(), uuid.New()
	queued := func(org uuid.UUID, to, key, body string, at time.Time, media ...string) *store.Message {
		m := outgoing(org, to)
		m.Status, m.SourceKind, m.DedupeKey, m.Body, m.CreatedAt, m.MediaURLs = store.StatusQueued, store.SourceCampaign, key, body, at, media
		return m
	}
	insert := func(msgs ...*store.Message) []uuid.UUID {
		var ids []uuid.UUID
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			ids, err = st.InsertOutgoingMany(ctx, tx, msgs)
			return err
		}))
		return ids
	}
	t0 := time.Now().Truncate(time.Microsecond)
	first := queued(org, "+12025550143", "c1:a", "one", t0, "https://example.com/a.png")
	require.Equal(t, []uuid.UUID{first.ID}, insert(first))

	again := queued(org, "+12025550143", "c1:a", "one again", t0.Add(time.Second))
	b1 := queued(org, "+12025550144", "c1:b", "b first", t0.Add(time.Second))
	b2 := queued(org, "+12025550144", "c1:b", "b twice in the batch", t0.Add(2*time.Second))
	c := queued(org, "+12025550144", "c1:c", "b newest", t0.Add(3*time.Second))
	foreign := queued(other, "+12025550143", "c1:a", "another org's key", t0)
	stored := insert(again, b1, b2, c, foreign)
	assert.ElementsMatch(t, []uuid.UUID{b1.ID, c.ID, foreign.ID}, stored)
	assert.Equal(t, first.ID, again.ID, "a used key answers the stored message")
	assert.Equal(t, b1.ID, b2.ID, "a key twice in one batch stores it once")

	got, err := st.Message(ctx, org, first.ID)
	require.NoError(t, err)
	assert.Equal(t, "one", got.Body)
	assert.Equal(t, []string{"https://example.com/a.png"}, got.MediaURLs)
	assert.Equal(t, "c1:a", got.DedupeKey)

	list, err := st.Conversations(ctx, org, store.ConversationFilter{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, list, "queued messages join their threads when claimed")
	thread, err := st.Thread(ctx, org, "+12025550144", nil, 10)
	require.NoError(t, err)
	assert.Empty(t, thread)

	// A text from the contact arrives while the campaign's messages wait in the queue.
	meanwhile := &store.Message{ID: uuid.Must(uuid.NewV7()), OrgID: org, Direction: store.Incoming, ContactPhone: "+12025550144",
		OurNumber: "+12025550100", Body: "are you there?", Provider: "sandbox", ProviderMessageID: "SMin", CreatedAt: time.Now()}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { _, err := st.InsertIncoming(ctx, tx, meanwhile); return err }))
	for _, id := range []uuid.UUID{first.ID, b1.ID, c.ID} {
		claimed, err := st.Claim(ctx, id, time.Now())
		require.NoError(t, err)
		require.True(t, claimed)
	}
	claimed, err := st.Claim(ctx, c.ID, time.Now())
	require.NoError(t, err)
	assert.False(t, claimed, "a message is claimed once")
	thread, err = st.Thread(ctx, org, "+12025550144", nil, 10)
	require.NoError(t, err)
	require.Len(t, thread, 3)
	assert.Equal(t, []string{"b newest", "b first", "are you there?"}, []string{thread[0].Body, thread[1].Body, thread[2].Body},
		"queued messages take their place in the thread when sent, after what arrived while they waited")
	list, err = st.Conversations(ctx, org, store.ConversationFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 2)
	last, unread := map[string]string{}, map[string]int32{}
	for _, c := range list {
		last[c.Phone], unread[c.Phone] = c.LastMessage, c.UnreadCount
	}
	assert.Equal(t, map[string]string{"+12025550143": "one", "+12025550144": "b newest"}, last)
	assert.Equal(t, map[string]int32{"+12025550143": 0, "+12025550144": 1}, unread, "sending does not read a thread")
}

// A queued message takes its place in the thread when it is claimed, but keeps its creation
// time (analytics reads it); the thread is ordered by the place.
func TestClaimKeepsCreationAndMovesThreadPlace(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	org := uuid.New()
	queued := outgoing(org, "+12025550143")
	queued.Status, queued.Body = store.StatusQueued, "queued an hour ago"
	queued.CreatedAt = time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	later := outgoing(org, "+12025550143")
	later.Body, later.CreatedAt = "sent half an hour ago", time.Now().Add(-30*time.Minute)
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		_, err := st.InsertOutgoingMany(ctx, tx, []*store.Message{queued, later})
		return err
	}))

	claimed, err := st.Claim(ctx, queued.ID, time.Now())
	require.NoError(t, err)
	require.True(t, claimed)

	got, err := st.Message(ctx, org, queued.ID)
	require.NoError(t, err)
	assert.True(t, got.CreatedAt.Equal(queued.CreatedAt), "creation time kept: %s, was %s", got.CreatedAt, queued.CreatedAt)
	assert.WithinDuration(t, time.Now(), got.ThreadAt, time.Minute)
	thread, err := st.Thread(ctx, org, "+12025550143", nil, 10)
	require.NoError(t, err)
	require.Len(t, thread, 2)
	assert.Equal(t, queued.ID, thread[0].ID, "the claimed message is the thread's latest")
}

// A claimed message withdrawn before the hand-off (an opt-out seen after its claim) leaves
// its thread and the conversation it joined at its claim: the thread's latest shown message is
// the conversation's last again, and a conversation with no other message goes.
func TestWithdrawnClaimedMessageLeavesItsConversation(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	org := uuid.New()
	withdraw := func(phone string) {
		m := outgoing(org, phone)
		m.Status, m.Body = store.StatusQueued, "never sent"
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { _, err := st.InsertOutgoing(ctx, tx, m); return err }))
		claimed, err := st.Claim(ctx, m.ID, time.Now())
		require.NoError(t, err)
		require.True(t, claimed)
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			before, changed, err := st.AdvanceStatus(ctx, tx, m.ID, store.StatusChange{Status: store.StatusFailed, ErrorCode: apierr.ReasonContactOptedOut, At: time.Now()})
			require.True(t, changed)
			if err != nil {
				return err
			}
			return st.Unthread(ctx, tx, before)
		}))
	}
	const talked, silent = "+12025550143", "+12025550144"
	earlier := &store.Message{ID: uuid.Must(uuid.NewV7()), OrgID: org, Direction: store.Incoming, ContactPhone: talked,
		OurNumber: "+12025550100", Body: "STOP", Provider: "sandbox", ProviderMessageID: "SMstop", CreatedAt: time.Now()}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { _, err := st.InsertIncoming(ctx, tx, earlier); return err }))
	withdraw(talked)
	withdraw(silent)

	thread, err := st.Thread(ctx, org, talked, nil, 10)
	require.NoError(t, err)
	require.Len(t, thread, 1)
	assert.Equal(t, "STOP", thread[0].Body, "the withdrawn message is not in the thread")
	list, err := st.Conversations(ctx, org, store.ConversationFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1, "the conversation of a withdrawn message only is gone")
	assert.Equal(t, talked, list[0].Phone)
	assert.Equal(t, "STOP", list[0].LastMessage)
	assert.Equal(t, store.Incoming, list[0].LastDirection)
}

// A deleted contact's history goes, except messages whose credits billing has not settled or
// that are still with the carrier: the reconciler needs their rows, or the credits would stay
// held for good.
func TestDeleteThreadKeepsMessagesStillOwed(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := context.Background()
	org := uuid.New()
	const phone = "+12025550143"
	settled, unsettled, sending := outgoing(org, phone), outgoing(org, phone), outgoing(org, phone)
	for _, m := range []*store.Message{settled, unsettled} {
		m.Status, m.Billable, m.HoldID = "delivered", true, uuid.NewString()
	}
	incoming := &store.Message{ID: uuid.Must(uuid.NewV7()), OrgID: org, Direction: store.Incoming, ContactPhone: phone,
		OurNumber: "+12025550100", Body: "hi", Provider: "sandbox", ProviderMessageID: "SMin", CreatedAt: time.Now()}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		for _, m := range []*store.Message{settled, unsettled, sending} {
			if _, err := st.InsertOutgoing(ctx, tx, m); err != nil {
				return err
			}
		}
		_, err := st.InsertIncoming(ctx, tx, incoming)
		return err
	}))
	require.NoError(t, st.MarkSettled(ctx, settled.ID))

	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		return st.DeleteThread(ctx, tx, org, phone, time.Now())
	}))
	_, err := st.Message(ctx, org, settled.ID)
	assert.ErrorIs(t, err, store.ErrNotFound, "a settled message is deleted with the contact")
	_, err = st.Message(ctx, org, incoming.ID)
	assert.ErrorIs(t, err, store.ErrNotFound, "an incoming message is deleted with the contact")
	_, err = st.Message(ctx, org, unsettled.ID)
	assert.NoError(t, err, "a message whose credits are unsettled is kept for the reconciler")
	_, err = st.Message(ctx, org, sending.ID)
	assert.NoError(t, err, "a message still with the carrier is kept")
}

// A batch of claims that names one message twice (a retried job beside its first run, both
// in one batch) claims it once: only the first request is answered true, so only one of the
// two hands it to the carrier. A paused source's message is not claimed.
func TestClaimManyClaimsEachMessageOnce(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	org := uuid.New()
	queue := func(source string) uuid.UUID {
		m := &store.Message{ID: uuid.Must(uuid.NewV7()), OrgID: org, Direction: store.Outgoing, ContactPhone: "+12025550143",
			OurNumber: "+12025550100", Body: "hi", Status: store.StatusQueued, Provider: "twilio",
			SourceKind: store.SourceCampaign, SourceID: source, CreatedAt: time.Now()}
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { _, err := st.InsertOutgoing(ctx, tx, m); return err }))
		return m.ID
	}
	a, b, paused := queue("c1"), queue("c1"), queue("c2")
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		return st.SetSourceState(ctx, tx, org, store.SourceCampaign, "c2", store.SourcePaused)
	}))
	now := time.Now()
	claimed, err := st.ClaimMany(ctx, []store.ClaimRequest{{ID: a, DispatchedAt: now}, {ID: b, DispatchedAt: now},
		{ID: a, DispatchedAt: now}, {ID: paused, DispatchedAt: now}, {ID: uuid.New(), DispatchedAt: now}})
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, false, false, false}, claimed)
	claimed, err = st.ClaimMany(ctx, []store.ClaimRequest{{ID: a, DispatchedAt: now}})
	require.NoError(t, err)
	assert.Equal(t, []bool{false}, claimed, "claimed already")
}

// Each stored outgoing message is announced once in a messages.created event, in the
// transaction that stores it (analytics counts messages from it); a deduplicated one is not
// announced again. One event names up to 250 of the messages a statement stored.
func TestStoredOutgoingMessagesAreAnnouncedOnce(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	st := store.New(pool)
	org := uuid.New()
	a, b := outgoing(org, "+12025550143"), outgoing(org, "+12025550144")
	a.SourceKind, a.SourceID, a.DedupeKey, a.Status = store.SourceCampaign, uuid.NewString(), "k:a", store.StatusQueued
	b.SourceKind, b.DedupeKey = store.SourceTest, "k:b"
	dup := outgoing(org, "+12025550143")
	dup.DedupeKey = "k:a"
	var many []*store.Message
	for i := range 600 {
		m := outgoing(org, fmt.Sprintf("+1202555%04d", 2000+i))
		m.DedupeKey = fmt.Sprint("many:", i)
		many = append(many, m)
	}
	for _, batch := range [][]*store.Message{{a, b}, {dup}, many} {
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { _, err := st.InsertOutgoingMany(ctx, tx, batch); return err }))
	}
	rows, err := pool.Query(ctx, `SELECT payload FROM outbox WHERE event_type = $1 ORDER BY id`, store.EventCreated)
	require.NoError(t, err)
	payloads, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	require.NoError(t, err)
	var sizes []int
	announced := map[string]int{}
	var events []*eventsv1.MessagesCreated
	for _, p := range payloads {
		var ev eventsv1.MessagesCreated
		require.NoError(t, proto.Unmarshal(p, &ev))
		assert.Equal(t, org.String(), ev.GetOrganizationId())
		sizes = append(sizes, len(ev.GetMessages()))
		for _, m := range ev.GetMessages() {
			announced[m.GetMessageId()]++
		}
		events = append(events, &ev)
	}
	assert.Equal(t, []int{2, 250, 250, 100}, sizes, "the duplicate is not announced; 600 in three events")
	assert.Len(t, announced, 602)
	for id, n := range announced {
		assert.Equal(t, 1, n, "announced once: %s", id)
	}
	first := events[0].GetMessages()
	assert.Equal(t, a.ID.String(), first[0].GetMessageId())
	assert.Equal(t, "campaign", first[0].GetSourceKind())
	assert.Equal(t, a.SourceID, first[0].GetSourceId())
	assert.Equal(t, "queued", first[0].GetStatus())
	assert.Equal(t, a.CreatedAt.UnixMicro(), first[0].GetCreatedAt().AsTime().UnixMicro())
	assert.Equal(t, "test", first[1].GetSourceKind(), "a test copy is announced as one")
}

// A campaign's bulk hand-off retried (messaging committed, the campaign did not hear it) comes
// back with the same dedupe keys but new message ids, and from a pool its numbers picked anew:
// whether it comes before its batch became messages or after, the pool's numbers are counted
// each message once, so the "least busy" number is picked from what they really hold.
func TestRetriedBulkBatchIsCountedOnce(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	org := uuid.New()
	pool := []string{"+13125550100", "+13125550101"}
	ids := []uuid.UUID{uuid.New(), uuid.New()}
	batch := func(shift int) []*store.Message {
		msgs := make([]*store.Message, 10)
		for i := range msgs {
			k := (i + shift) % len(pool)
			msgs[i] = &store.Message{
				ID: uuid.Must(uuid.NewV7()), OrgID: org, Direction: store.Outgoing, ContactPhone: fmt.Sprintf("+1202555%04d", i),
				OurNumber: pool[k], PhoneNumberID: &ids[k], Body: "Hi", Status: store.StatusQueued, Provider: "sandbox",
				Credits: 1, SourceKind: store.SourceCampaign, SourceID: "c1", DedupeKey: fmt.Sprintf("c1:%d", i),
				CreatedAt: time.Now(),
			}
		}
		if shift == 0 { // the first try gives the first number 7 of 10, the retry 5
			for _, m := range msgs[:4] {
				m.OurNumber, m.PhoneNumberID = pool[0], &ids[0]
			}
		}
		return msgs
	}
	assigned := func() map[string]int { return assignedTo(t, st, org, store.SourceCampaign, "c1") }
	want := map[string]int{pool[0]: 7, pool[1]: 3}

	require.NoError(t, st.InsertBulk(ctx, batch(0), time.Now()))
	require.NoError(t, st.InsertBulk(ctx, batch(1), time.Now()), "retried before it became messages")
	assert.Equal(t, want, assigned())

	created := 0
	for {
		var taken *store.TakenBulk
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			taken, err = st.ExpandBulk(ctx, tx, nil)
			return err
		}))
		if taken == nil {
			break
		}
		created += len(taken.Created)
	}
	assert.Equal(t, 10, created)
	require.NoError(t, st.InsertBulk(ctx, batch(1), time.Now()), "retried after")
	assert.Equal(t, want, assigned())

	// A batch of other recipients of the same campaign counts as ever.
	next := batch(0)
	for i, m := range next {
		m.DedupeKey = fmt.Sprintf("c1:%d", 100+i)
	}
	require.NoError(t, st.InsertBulk(ctx, next, time.Now()))
	assert.Equal(t, map[string]int{pool[0]: 14, pool[1]: 6}, assigned())
}

func TestRetriedPickIsCountedOnce(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	org := uuid.New()
	pool := []string{"+13125550100", "+13125550101"}
	ids := []uuid.UUID{uuid.New(), uuid.New()}
	// A poll's participants, picked their numbers by PickSenders: keyed by phone.
	pick := func(from, n, first int) []*store.Message {
		msgs := make([]*store.Message, n)
		for i := range msgs {
			k := 1
			if i < first {
				k = 0
			}
			phone := fmt.Sprintf("+1202555%04d", from+i)
			msgs[i] = &store.Message{OrgID: org, ContactPhone: phone, OurNumber: pool[k], PhoneNumberID: &ids[k],
				SourceKind: store.SourcePoll, SourceID: "p1", DedupeKey: "pick:" + phone}
		}
		return msgs
	}
	assigned := func() map[string]int { return assignedTo(t, st, org, store.SourcePoll, "p1") }

	require.NoError(t, st.CountAssigned(ctx, pick(0, 10, 6)))
	require.NoError(t, st.CountAssigned(ctx, pick(0, 10, 3)), "the same participants picked again (a retried start)")
	assert.Equal(t, map[string]int{pool[0]: 6, pool[1]: 4}, assigned())

	require.NoError(t, st.CountAssigned(ctx, pick(10, 4, 4)), "other participants count as ever")
	assert.Equal(t, map[string]int{pool[0]: 10, pool[1]: 4}, assigned())
}

// assignedTo is how many messages each number of a source was given, by number.
func assignedTo(t *testing.T, st *store.Store, org uuid.UUID, kind, id string) map[string]int {
	t.Helper()
	numbers, err := st.SourceNumbers(context.Background(), org, kind, id)
	require.NoError(t, err)
	out := map[string]int{}
	for _, n := range numbers {
		out[n.Number] = n.Assigned
	}
	return out
}
