package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/outbox"
)

func TestCommittedEventIsDelivered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := uuid.New()
	got := make(chan outbox.Message, 1)
	e.startConsumer("g", "m1", func(_ context.Context, _ pgx.Tx, m outbox.Message) error {
		got <- m
		return nil
	})
	e.startRelay()
	id := e.enqueue("contact.deleted", org, "hello")

	select {
	case m := <-got:
		require.Equal(t, id, m.EventID)
		require.Equal(t, "contact.deleted", m.Type)
		require.Equal(t, org, m.OrgID)
		var payload wrapperspb.StringValue
		require.NoError(t, m.Unmarshal(&payload))
		require.Equal(t, "hello", payload.GetValue())
	case <-time.After(waitFor):
		t.Fatal("event not delivered")
	}
	e.waitDrained("g")
	require.Equal(t, 1, e.count(`SELECT count(*) FROM processed_events WHERE consumer = 'g' AND event_id = $1`, id))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM outbox`))
	require.Zero(t, e.count(`SELECT count(*) FROM outbox_pending`))
}

func TestRolledBackEventIsNeverDelivered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := &recorder{}
	e.startRelay()
	e.startConsumer("g", "m1", rec.handler("m1"))

	tx, err := e.db.Begin(e.ctx)
	require.NoError(t, err)
	require.NoError(t, outbox.Enqueue(e.ctx, tx, outbox.Event{Type: "contact.deleted", OrgID: uuid.New(), Payload: wrapperspb.String("x")}))
	require.NoError(t, tx.Rollback(e.ctx))
	marker := e.enqueue("contact.created", uuid.New(), "marker")

	e.waitPublished(1)
	e.waitDrained("g")
	require.Equal(t, 1, e.count(`SELECT count(*) FROM outbox`))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled`))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled WHERE event_id = $1`, marker))
}

func TestRepublishedEventIsHandledOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := &recorder{}
	e.startRelay()
	e.startConsumer("g", "m1", rec.handler("m1"))
	id := e.enqueue("contact.deleted", uuid.New(), "x")
	e.waitDrained("g")
	require.Equal(t, 1, rec.callsOf(id))

	entries, err := e.rdb.XRange(e.ctx, e.stream, "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.NoError(t, e.rdb.XAdd(e.ctx, &redis.XAddArgs{Stream: e.stream, Values: entries[0].Values}).Err())
	e.waitDrained("g")

	require.Equal(t, 1, rec.callsOf(id))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled`))
}

// Events of a type the handler applies idempotently leave no processed_events row and are
// applied again when redelivered; the others are still applied once, one at a time and in a
// batch alike.
func TestIdempotentTypesAreAppliedAgainWithoutARecord(t *testing.T) {
	t.Parallel()
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			rec := &recorder{}
			opts := []outbox.Option{outbox.WithIdempotent("contact.updated")}
			if batched {
				opts = append(opts, outbox.WithBatchHandler(func(ctx context.Context, tx pgx.Tx, ms []outbox.Message) error {
					for _, m := range ms {
						if err := rec.handler("m1")(ctx, tx, m); err != nil {
							return err
						}
					}
					return nil
				}))
			}
			e.startRelay()
			updated := e.enqueue("contact.updated", uuid.New(), "again")
			deleted := e.enqueue("contact.deleted", uuid.New(), "once")
			e.waitPublished(2) // before the consumer starts: one read takes both
			e.startConsumer("g", "m1", rec.handler("m1"), opts...)
			e.waitDrained("g")

			entries, err := e.rdb.XRange(e.ctx, e.stream, "-", "+").Result()
			require.NoError(t, err)
			require.Len(t, entries, 2)
			for _, en := range entries {
				require.NoError(t, e.rdb.XAdd(e.ctx, &redis.XAddArgs{Stream: e.stream, Values: en.Values}).Err())
			}
			e.waitDrained("g")

			require.Equal(t, 2, rec.callsOf(updated), "the idempotent event is applied on each delivery")
			require.Equal(t, 1, rec.callsOf(deleted))
			require.Equal(t, 2, e.count(`SELECT count(*) FROM handled WHERE event_id = $1`, updated))
			require.Equal(t, 1, e.count(`SELECT count(*) FROM handled WHERE event_id = $1`, deleted))
			require.Zero(t, e.count(`SELECT count(*) FROM processed_events WHERE event_id = $1`, updated))
			require.Equal(t, 1, e.count(`SELECT count(*) FROM processed_events WHERE event_id = $1`, deleted))
		})
	}
}

func TestFailedHandlerIsRetriedThenProcessedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := &recorder{fail: func(_ outbox.Message, call int) error {
		switch call {
		case 1:
			panic("handler bug")
		case 2:
			return errors.New("downstream unavailable")
		}
		return nil
	}}
	e.startRelay()
	e.startConsumer("g", "m1", rec.handler("m1"))
	id := e.enqueue("contact.deleted", uuid.New(), "x")

	e.waitDrained("g")
	require.Equal(t, 3, rec.callsOf(id))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled WHERE event_id = $1`, id))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM processed_events WHERE event_id = $1`, id))
	require.Zero(t, e.rdb.XLen(e.ctx, outbox.DeadLetterStream(e.stream)).Val())
}

func TestStoppedConsumerCatchesUpAndNewGroupReplays(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := &recorder{}
	org := uuid.New()
	e.startRelay()
	stop := e.startConsumer("g", "m1", rec.handler("m1"))
	e.enqueue("contact.created", org, "before")
	e.waitDrained("g")
	stop()

	for range 5 {
		e.enqueue("contact.created", org, "while down")
	}
	e.waitPublished(6)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled`))

	e.startConsumer("g", "m1", rec.handler("m1"))
	e.waitDrained("g")
	require.Equal(t, 6, e.count(`SELECT count(DISTINCT event_id) FROM handled WHERE member = 'm1'`))
	require.Equal(t, 6, e.count(`SELECT count(*) FROM handled WHERE member = 'm1'`))

	// A group created now starts at the beginning of the stream.
	e.startConsumer("late", "l1", rec.handler("late"))
	e.waitDrained("late")
	require.Equal(t, 6, e.count(`SELECT count(DISTINCT event_id) FROM handled WHERE member = 'late'`))
}

func TestGroupMembersSplitWorkWithoutDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const events = 60
	org := uuid.New()
	for range events {
		e.enqueue("contact.created", org, "x")
	}
	e.startRelay()
	e.waitPublished(events)

	// Each member's first handler call waits until the other has started one too, so the
	// test proves both take part instead of hoping the scheduler interleaves them.
	var started sync.WaitGroup
	started.Add(2)
	bothStarted := make(chan struct{})
	go func() { started.Wait(); close(bothStarted) }()
	rec := &recorder{}
	member := func(name string) outbox.Handler {
		first := sync.OnceFunc(started.Done)
		record := rec.handler(name)
		return func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
			first()
			select {
			case <-bothStarted:
			case <-time.After(waitFor):
				return errors.New("the other member never handled an event")
			}
			return record(ctx, tx, m)
		}
	}
	e.startConsumer("g", "m1", member("m1"), outbox.WithBatchSize(5))
	e.startConsumer("g", "m2", member("m2"), outbox.WithBatchSize(5))
	e.waitDrained("g")

	require.Equal(t, events, e.count(`SELECT count(*) FROM handled`))
	require.Equal(t, events, e.count(`SELECT count(DISTINCT event_id) FROM handled`))
	require.Positive(t, e.count(`SELECT count(*) FROM handled WHERE member = 'm1'`))
	require.Positive(t, e.count(`SELECT count(*) FROM handled WHERE member = 'm2'`))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for id, n := range rec.calls {
		require.Equal(t, 1, n, "event %s", id)
	}
}

func TestDeadMembersEntriesAreClaimed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startRelay()
	id := e.enqueue("contact.deleted", uuid.New(), "x")
	e.waitPublished(1)
	// m1 takes the entry and dies before acknowledging it.
	require.NoError(t, e.rdb.XGroupCreate(e.ctx, e.stream, "g", "0").Err())
	read, err := e.rdb.XReadGroup(e.ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "m1", Streams: []string{e.stream, ">"}, Block: -1}).Result()
	require.NoError(t, err)
	require.Len(t, read[0].Messages, 1)

	rec := &recorder{}
	e.startConsumer("g", "m2", rec.handler("m2"), outbox.WithClaimIdle(100*time.Millisecond))
	e.waitDrained("g")
	require.Equal(t, 1, rec.callsOf(id))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled WHERE event_id = $1 AND member = 'm2'`, id))
}

func TestPoisonEventIsDeadLettered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := &recorder{fail: func(m outbox.Message, _ int) error {
		if m.Type == "test.poison" {
			return errors.New("cannot apply")
		}
		return nil
	}}
	e.startRelay()
	e.startConsumer("g", "m1", rec.handler("m1"), outbox.WithMaxDeliveries(3))
	poison := e.enqueue("test.poison", uuid.New(), "x")
	good := e.enqueue("contact.created", uuid.New(), "y")

	e.waitDrained("g")
	require.Equal(t, 3, rec.callsOf(poison))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled WHERE event_id = $1`, good))
	require.Zero(t, e.count(`SELECT count(*) FROM processed_events WHERE event_id = $1`, poison))
	dead, err := e.rdb.XRange(e.ctx, outbox.DeadLetterStream(e.stream), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, poison.String(), dead[0].Values["event_id"])
	require.Equal(t, "test.poison", dead[0].Values["type"])
	require.Equal(t, "g", dead[0].Values["group"])
	require.Equal(t, "3", dead[0].Values["deliveries"])
	require.Equal(t, "cannot apply", dead[0].Values["error"])
	require.NotEmpty(t, dead[0].Values["source_id"])
}

func TestMalformedEntryIsDeadLetteredWithoutHandling(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := &recorder{}
	e.startConsumer("g", "m1", rec.handler("m1"))
	require.NoError(t, e.rdb.XAdd(e.ctx, &redis.XAddArgs{Stream: e.stream, Values: []any{"event_id", "not-a-uuid", "type", "x"}}).Err())

	e.waitDrained("g")
	dead, err := e.rdb.XRange(e.ctx, outbox.DeadLetterStream(e.stream), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Contains(t, dead[0].Values["error"], "malformed entry")
	require.Equal(t, "not-a-uuid", dead[0].Values["event_id"])
	require.Empty(t, rec.calls)
}

func TestConsumerPruneDeletesOnlyItsOldRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	oldID, newID, otherID := uuid.New(), uuid.New(), uuid.New()
	_, err := e.db.Exec(e.ctx, `INSERT INTO processed_events (consumer, event_id, processed_at) VALUES
		('g', $1, now() - interval '2 hours'), ('g', $2, now()), ('other', $3, now() - interval '2 hours')`,
		oldID, newID, otherID)
	require.NoError(t, err)

	n, err := outbox.NewConsumer(e.db, e.rdb, e.stream, "g", "m1", (&recorder{}).handler("m1")).Prune(e.ctx, time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Zero(t, e.count(`SELECT count(*) FROM processed_events WHERE event_id = $1`, oldID))
	require.Equal(t, 2, e.count(`SELECT count(*) FROM processed_events`))
}

// The entries of one read share a transaction, each under a savepoint: a handler that fails
// after writing rolls back its own event only, the others are applied and acknowledged, and
// the failed one is retried and applied once.
func TestFailedHandlerInABatchRollsBackOnlyItsEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := uuid.New()
	var ids []uuid.UUID
	for i := range 5 {
		ids = append(ids, e.enqueue("contact.deleted", org, fmt.Sprint(i)))
	}
	bad := ids[2]
	e.startRelay()
	e.waitPublished(5) // before the consumer starts: one read takes them all
	var mu sync.Mutex
	calls := map[uuid.UUID]int{}
	e.startConsumer("g", "m1", func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		mu.Lock()
		calls[m.EventID]++
		call := calls[m.EventID]
		mu.Unlock()
		if _, err := tx.Exec(ctx, `INSERT INTO handled (event_id, member, type) VALUES ($1, 'm1', $2)`, m.EventID, m.Type); err != nil {
			return err
		}
		if m.EventID == bad && call == 1 {
			return errors.New("downstream unavailable")
		}
		return nil
	}, outbox.WithRetryBackoff(50*time.Millisecond, time.Second))

	e.waitDrained("g")
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		want := 1
		if id == bad {
			want = 2
		}
		require.Equal(t, want, calls[id], "handler calls of %s", id)
		require.Equal(t, 1, e.count(`SELECT count(*) FROM handled WHERE event_id = $1`, id), "applied once: %s", id)
	}
}

func TestConsumerOfSomeTypesAcknowledgesTheOthersWithoutRecordingThem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := &recorder{}
	e.startRelay()
	e.startConsumer("g", "m1", rec.handler("m1"), outbox.WithTypes("contact.deleted"))

	skipped := e.enqueue("contact.created", uuid.New(), "other")
	wanted := e.enqueue("contact.deleted", uuid.New(), "wanted")

	e.waitPublished(2)
	e.waitDrained("g")
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled`))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled WHERE event_id = $1`, wanted))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM processed_events WHERE event_id = $1`, skipped))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM processed_events WHERE event_id = $1`, wanted))
}

// A filter narrows a type to the events it keeps: the others are acknowledged as events of
// other types are, without a transaction or a processed_events row.
func TestConsumerFilterAcknowledgesWhatItDropsWithoutRecordingIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := &recorder{}
	e.startRelay()
	keep := func(m outbox.Message) bool {
		var s wrapperspb.StringValue
		return m.Unmarshal(&s) == nil && s.GetValue() == "wanted"
	}
	e.startConsumer("g", "m1", rec.handler("m1"), outbox.WithTypes("message.status_changed"), outbox.WithFilter(keep))

	skipped := e.enqueue("message.status_changed", uuid.New(), "other")
	wanted := e.enqueue("message.status_changed", uuid.New(), "wanted")

	e.waitPublished(2)
	e.waitDrained("g")
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled`))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled WHERE event_id = $1`, wanted))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM processed_events WHERE event_id = $1`, skipped))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM processed_events WHERE event_id = $1`, wanted))
}

// With partitions, one key's events are applied in stream order while another key's go on at
// once: key a's first event waits for one of key b's, which one transaction in a row could
// never give it.
func TestPartitionsApplyOneKeyInOrderAndOthersAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := uuid.New()
	var ids []uuid.UUID
	for i := range 6 {
		ids = append(ids, e.enqueue("contact.deleted", org, []string{"a", "b"}[i%2]))
	}
	e.startRelay()
	e.waitPublished(6) // before the consumer starts: one read takes them all
	key := func(m outbox.Message) string {
		var v wrapperspb.StringValue
		require.NoError(t, m.Unmarshal(&v))
		return v.GetValue()
	}
	var mu sync.Mutex
	order := map[string][]uuid.UUID{}
	bDone := make(chan struct{})
	var once sync.Once
	e.startConsumer("g", "m1", func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		k := key(m)
		if k == "a" {
			select {
			case <-bDone:
			case <-time.After(5 * time.Second):
				return errors.New("key b's events waited for key a's")
			}
		}
		mu.Lock()
		order[k] = append(order[k], m.EventID)
		mu.Unlock()
		if k == "b" {
			once.Do(func() { close(bDone) })
		}
		_, err := tx.Exec(ctx, `INSERT INTO handled (event_id, member, type) VALUES ($1, 'm1', $2)`, m.EventID, m.Type)
		return err
	}, outbox.WithPartitions(64, key))

	e.waitDrained("g")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []uuid.UUID{ids[0], ids[2], ids[4]}, order["a"], "key a in stream order, each once")
	require.Equal(t, []uuid.UUID{ids[1], ids[3], ids[5]}, order["b"])
	require.Equal(t, 6, e.count(`SELECT count(*) FROM handled`))
}

// With a batch handler a read's new events are applied in one call, each once (an event
// already processed is left out); when the batch fails, the read is applied event by event
// with the handler, so only the bad event waits for its retry.
func TestBatchHandlerAppliesAReadOnceAndFallsBackEventByEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := uuid.New()
	var ids []uuid.UUID
	for i := range 6 {
		ids = append(ids, e.enqueue("contact.deleted", org, fmt.Sprint(i)))
	}
	_, err := e.db.Exec(e.ctx, `INSERT INTO processed_events (consumer, event_id) VALUES ('g', $1)`, ids[0])
	require.NoError(t, err)
	bad := ids[3]
	e.startRelay()
	e.waitPublished(6) // before the consumer starts: one read takes them all
	var mu sync.Mutex
	var batches [][]uuid.UUID
	single := map[uuid.UUID]int{}
	insert := func(ctx context.Context, tx pgx.Tx, m outbox.Message, how string) error {
		_, err := tx.Exec(ctx, `INSERT INTO handled (event_id, member, type) VALUES ($1, $2, $3)`, m.EventID, how, m.Type)
		return err
	}
	batch := func(ctx context.Context, tx pgx.Tx, ms []outbox.Message) error {
		mu.Lock()
		var got []uuid.UUID
		for _, m := range ms {
			got = append(got, m.EventID)
		}
		batches = append(batches, got)
		mu.Unlock()
		for _, m := range ms {
			if err := insert(ctx, tx, m, "batch"); err != nil {
				return err
			}
			if m.EventID == bad {
				return errors.New("cannot apply this one")
			}
		}
		return nil
	}
	e.startConsumer("g", "m1", func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		mu.Lock()
		single[m.EventID]++
		call := single[m.EventID]
		mu.Unlock()
		if m.EventID == bad && call == 1 {
			return errors.New("still not")
		}
		return insert(ctx, tx, m, "single")
	}, outbox.WithBatchHandler(batch), outbox.WithRetryBackoff(50*time.Millisecond, time.Second))

	e.waitDrained("g")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, [][]uuid.UUID{ids[1:], {bad}}, batches, "one call with the five new events, then the retry of the one that failed")
	require.Zero(t, e.count(`SELECT count(*) FROM handled WHERE member = 'batch'`), "the failed batch left nothing")
	for _, id := range ids[1:] {
		require.Equal(t, 1, e.count(`SELECT count(*) FROM handled WHERE event_id = $1`, id), "applied once: %s", id)
	}
	require.Zero(t, e.count(`SELECT count(*) FROM handled WHERE event_id = $1`, ids[0]), "processed before: skipped")
	require.Equal(t, 2, single[bad], "the bad event failed alone and was retried")
}
