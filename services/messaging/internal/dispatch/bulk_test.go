package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// bulk stores a bulk batch of n queued campaign messages of source, to +1202555xxxx from the
// fixture's number, keyed "<source>:<i>" (so a batch stored twice holds the same keys), due at
// due.
func (f *fixture) bulk(source string, n int, due time.Time) {
	f.t.Helper()
	f.bulkFrom(f.number, source, n, due)
}

// bulkFrom is bulk from our number `from`.
func (f *fixture) bulkFrom(from, source string, n int, due time.Time) {
	f.t.Helper()
	msgs := make([]*store.Message, n)
	for i := range msgs {
		msgs[i] = &store.Message{
			ID: uuid.Must(uuid.NewV7()), OrgID: f.org, ContactPhone: fmt.Sprintf("+1202555%04d", i), OurNumber: from,
			Body: "Hi", Status: store.StatusQueued, Provider: carrier.SandboxName, Credits: 1, Billable: true,
			SourceKind: store.SourceCampaign, SourceID: source, DedupeKey: fmt.Sprintf("%s:%d", source, i), CreatedAt: time.Now(),
		}
	}
	require.NoError(f.t, f.store.InsertBulk(context.Background(), msgs, due))
}

// count runs a count query.
func (f *fixture) count(query string, args ...any) (n int) {
	f.t.Helper()
	require.NoError(f.t, f.pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

// statusChanges counts the status changes published, whether in events of their own or
// several to an event.
func (f *fixture) statusChanges() (n int) {
	f.t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT event_type, payload FROM outbox WHERE event_type IN ($1, $2)`,
		EventStatusChanged, EventStatusesChanged)
	require.NoError(f.t, err)
	var typ string
	var payload []byte
	_, err = pgx.ForEachRow(rows, []any{&typ, &payload}, func() error {
		if typ == EventStatusChanged {
			n++
			return nil
		}
		var ev eventsv1.MessagesStatusChanged
		if err := proto.Unmarshal(payload, &ev); err != nil {
			return err
		}
		n += len(ev.GetChanges())
		return nil
	})
	require.NoError(f.t, err)
	return n
}

func (f *fixture) messagesOf(source string) int {
	return f.count(`SELECT count(*) FROM messages WHERE source_id = $1`, source)
}

// A due bulk batch becomes its messages, each with its dispatch job, announced together in one
// messages.created event; the same batch handed twice creates nothing more; a batch due later (quiet hours)
// stays a row until it is due.
func TestBulkBatchBecomesMessagesWhenDueAndOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.dispatcher(nil, 100, 0) // not started: the test expands
	f.bulk("c1", 3, time.Now())
	f.bulk("c1", 3, time.Now()) // a retried hand-off
	f.bulk("c2", 2, time.Now().Add(time.Hour))

	require.NoError(t, d.expandDue(ctx))
	assert.Equal(t, 3, f.messagesOf("c1"), "one message per dedupe key")
	assert.Equal(t, 3, f.queuedFor(f.number), "each queued for dispatch once")
	assert.Equal(t, 1, f.count(`SELECT count(*) FROM river_job WHERE kind = $1`, sendGroupArgs{}.Kind()), "in one group job")
	assert.Equal(t, 1, f.count(`SELECT count(*) FROM outbox WHERE event_type = $1`, store.EventCreated), "announced together")
	assert.Zero(t, f.messagesOf("c2"), "not due yet: no message")
	assert.Equal(t, 1, f.count(`SELECT count(*) FROM bulk_batches`), "the later batch waits")

	_, err := f.pool.Exec(ctx, `UPDATE bulk_batches SET due_at = now()`) // its window opened
	require.NoError(t, err)
	require.NoError(t, d.expandDue(ctx))
	assert.Equal(t, 2, f.messagesOf("c2"))
	assert.Zero(t, f.count(`SELECT count(*) FROM bulk_batches`))
	m, err := f.store.Message(ctx, f.org, uuid.MustParse(f.one(`SELECT id::text FROM messages WHERE dedupe_key = 'c2:1'`)))
	require.NoError(t, err)
	assert.Equal(t, store.StatusQueued, m.Status)
	assert.Equal(t, "+12025550001", m.ContactPhone)
	assert.Equal(t, f.number, m.OurNumber)
	assert.Equal(t, "Hi", m.Body)
	assert.True(t, m.Billable)
	assert.EqualValues(t, 1, m.Credits)
}

// A bulk batch keeps each message's route: under forceRoute AUTO one recipient's long merged
// text is an MMS while another's short one is an SMS (pkg/route), and a batch stored before
// the per-message column takes the batch's is_mms.
func TestBulkBatchKeepsEachMessagesRoute(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.dispatcher(nil, 100, 0) // not started: the test expands
	msgs := make([]*store.Message, 3)
	for i := range msgs {
		msgs[i] = &store.Message{
			ID: uuid.Must(uuid.NewV7()), OrgID: f.org, ContactPhone: fmt.Sprintf("+1202555%04d", i), OurNumber: f.number,
			Body: "Hi", Status: store.StatusQueued, Provider: carrier.SandboxName, Credits: 1, Billable: true, IsMMS: i == 1,
			SourceKind: store.SourceCampaign, SourceID: "mixed", DedupeKey: fmt.Sprintf("mixed:%d", i), CreatedAt: time.Now(),
		}
	}
	msgs[1].Credits = 2
	require.NoError(t, f.store.InsertBulk(ctx, msgs, time.Now()))
	f.bulk("old", 2, time.Now())
	_, err := f.pool.Exec(ctx, `UPDATE bulk_batches SET mms = NULL, is_mms = true WHERE source_id = 'old'`)
	require.NoError(t, err)

	require.NoError(t, d.expandDue(ctx))
	for i, want := range []bool{false, true, false} {
		m, err := f.store.Message(ctx, f.org, msgs[i].ID)
		require.NoError(t, err)
		assert.Equal(t, want, m.IsMMS, "message %d", i)
		assert.EqualValues(t, msgs[i].Credits, m.Credits, "message %d", i)
	}
	assert.Equal(t, 2, f.count(`SELECT count(*) FROM messages WHERE source_id = 'old' AND is_mms`))
}

// queuedFor is how many messages from our number `from` wait in dispatch jobs.
func (f *fixture) queuedFor(from string) int {
	return f.count(`SELECT coalesce(sum(`+waitingMessages+`), 0) FROM river_job
		WHERE kind IN ($1, $2) AND args->>'number' = $3`, sendArgs{}.Kind(), sendGroupArgs{}.Kind(), from)
}

func (f *fixture) one(query string) (s string) {
	f.t.Helper()
	require.NoError(f.t, f.pool.QueryRow(context.Background(), query).Scan(&s))
	return s
}

// Batches are expanded only while their number's dispatch queue is short: the audience of a
// large campaign waits as batches, not as a million jobs, the next batch follows as the queue
// drains, and another number's batches neither wait behind a full one nor queue behind it.
func TestBulkExpansionFollowsTheQueue(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.dispatcher(nil, 100, 0)
	for i := range 3 {
		f.bulk(fmt.Sprintf("c%d", i), 1000, time.Now())
	}
	const other = "+19995550199"
	f.bulkFrom(other, "o", 1000, time.Now())
	require.NoError(t, d.expandDue(ctx))
	assert.Equal(t, expandBelow, f.queuedFor(f.number), "expanded up to the queue's length")
	assert.Equal(t, 1000, f.queuedFor(other), "another number's batch is not held up")
	assert.Equal(t, 1, f.count(`SELECT count(*) FROM bulk_batches`))
	assert.Equal(t, 1000, f.messagesOf("c0"), "oldest first")
	// River hands out the oldest job first: the two numbers' first batches were queued in
	// turn, so that neither waits for the other's run.
	rows, err := f.pool.Query(ctx, `SELECT args->>'number' FROM river_job ORDER BY id LIMIT 4`)
	require.NoError(t, err)
	first, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{f.number, other, f.number, other}, first)

	_, err = f.pool.Exec(ctx, `DELETE FROM river_job WHERE id IN (SELECT id FROM river_job WHERE args->>'number' = $1 ORDER BY id LIMIT $2)`,
		f.number, 1500/groupMax) // dispatched
	require.NoError(t, err)
	require.NoError(t, d.expandDue(ctx))
	assert.Equal(t, 1000, f.messagesOf("c2"))
	assert.Zero(t, f.count(`SELECT count(*) FROM bulk_batches`))
}

// A held or paused source's batches wait for its release or resume; a canceled source's are
// dropped, never becoming messages, also one handed over after the cancel.
func TestBulkBatchesOfHeldPausedAndCanceledSources(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.dispatcher(nil, 100, 0)
	f.bulk("held", 2, time.Now())
	f.bulk("paused", 2, time.Now())
	f.bulk("canceled", 2, time.Now())
	require.NoError(t, d.SetSourceState(ctx, f.org, store.SourceCampaign, "held", store.SourceHeld))
	require.NoError(t, d.SetSourceState(ctx, f.org, store.SourceCampaign, "paused", store.SourcePaused))
	require.NoError(t, d.SetSourceState(ctx, f.org, store.SourceCampaign, "canceled", store.SourceCanceled))
	assert.Zero(t, f.count(`SELECT count(*) FROM bulk_batches WHERE source_id = 'canceled'`), "dropped with the cancel")
	f.bulk("canceled", 2, time.Now()) // a hand-off that crossed the cancel

	require.NoError(t, d.expandDue(ctx))
	assert.Zero(t, f.messagesOf("held"), "waits while held")
	assert.Zero(t, f.messagesOf("paused"), "waits while paused")
	assert.Zero(t, f.messagesOf("canceled"), "never created")
	assert.Equal(t, 2, f.count(`SELECT count(*) FROM bulk_batches`), "only the held and paused sources' batches are left")

	for _, src := range []string{"held", "paused"} {
		require.NoError(t, d.SetSourceState(ctx, f.org, store.SourceCampaign, src, store.SourceActive))
	}
	require.NoError(t, d.expandDue(ctx))
	assert.Equal(t, 2, f.messagesOf("held"))
	assert.Equal(t, 2, f.messagesOf("paused"))
}

// A started dispatcher expands a due batch by itself and its messages go out.
func TestBulkBatchIsSentByARunningDispatcher(t *testing.T) {
	f := newFixture(t)
	d := f.dispatcher(nil, 100, time.Hour)
	start(t, d)
	msgs := []*store.Message{{
		ID: uuid.Must(uuid.NewV7()), OrgID: f.org, ContactPhone: "+12025550160", OurNumber: f.number, Body: "Thanks!",
		Status: store.StatusQueued, Provider: carrier.SandboxName, SourceKind: store.SourceSystem, SourceID: "s1",
		DedupeKey: "s1:0", CreatedAt: time.Now(),
	}}
	require.NoError(t, f.store.InsertBulk(context.Background(), msgs, time.Now()))
	d.WakeExpander()
	require.Eventually(t, func() bool {
		m, err := f.store.Message(context.Background(), f.org, msgs[0].ID) // not found until expanded
		return err == nil && m.Status == store.StatusSent
	}, 20*time.Second, 50*time.Millisecond, "the batch's message created and sent")
}

// A batch that cannot be expanded (here, arrays of unequal lengths: a message without text) is
// set aside, and the batches behind it go on.
func TestBulkBatchThatFailsIsSetAside(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.dispatcher(nil, 100, 0)
	f.bulk("broken", 2, time.Now().Add(-time.Minute))
	_, err := f.pool.Exec(ctx, `UPDATE bulk_batches SET bodies = bodies[1:1]`)
	require.NoError(t, err)
	f.bulk("fine", 2, time.Now())

	assert.Error(t, d.expandDue(ctx))
	require.NoError(t, d.expandDue(ctx))
	assert.Equal(t, 2, f.messagesOf("fine"), "the next batch expanded")
	assert.Zero(t, f.messagesOf("broken"))
	assert.Equal(t, 1, f.count(`SELECT count(*) FROM bulk_batches WHERE source_id = 'broken' AND due_at > now()`), "set aside for a while, not dropped")
}
