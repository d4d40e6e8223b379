package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/outbox"
)

func TestRelayPublishesCommittedRowsInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := uuid.New()
	var ids []string
	for i := range 5 {
		ids = append(ids, e.enqueue("contact.created", org, string(rune('a'+i))).String())
	}
	// A batch smaller than the backlog: the relay must keep going without waiting to poll.
	e.startRelay(outbox.WithBatchSize(2), outbox.WithPollInterval(time.Hour))
	e.waitPublished(5)

	entries, err := e.rdb.XRange(e.ctx, e.stream, "-", "+").Result()
	require.NoError(t, err)
	var got []string
	for _, en := range entries {
		got = append(got, en.Values["event_id"].(string))
		require.Equal(t, "contact.created", en.Values["type"])
		require.Equal(t, org.String(), en.Values["org"])
	}
	require.Equal(t, ids, got)
}

func TestRelayCrashBeforeCommitLeavesDuplicateTheConsumerIgnores(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.enqueue("contact.deleted", uuid.New(), "x")
	stopRelay := e.startRelay()
	e.waitPublished(1)
	stopRelay()
	// The state a relay leaves when it dies after XADD but before its commit: the entry is in
	// the stream and the row still waits.
	_, err := e.db.Exec(e.ctx, `INSERT INTO outbox_pending SELECT id FROM outbox`)
	require.NoError(t, err)
	e.startRelay()
	e.waitPublished(2)
	entries, err := e.rdb.XRange(e.ctx, e.stream, "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 2)
	require.Equal(t, entries[0].Values["event_id"], entries[1].Values["event_id"])

	rec := &recorder{}
	e.startConsumer("g", "m1", rec.handler("m1"))
	e.waitDrained("g")
	require.Equal(t, 1, rec.callsOf(id))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM handled WHERE event_id = $1`, id))
}

func TestPruneDeletesOnlyOldPublishedRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := uuid.New()
	old := e.enqueue("contact.created", org, "old")
	recent := e.enqueue("contact.created", org, "recent")
	unpublished := e.enqueue("contact.created", org, "unpublished")
	_, err := e.db.Exec(e.ctx, `UPDATE outbox SET created_at = now() - interval '2 hours' WHERE event_id = ANY($1)`, []uuid.UUID{old, unpublished})
	require.NoError(t, err)
	_, err = e.db.Exec(e.ctx, `UPDATE outbox SET created_at = now() - interval '1 minute' WHERE event_id = $1`, recent)
	require.NoError(t, err)
	_, err = e.db.Exec(e.ctx, `DELETE FROM outbox_pending WHERE id IN (SELECT id FROM outbox WHERE event_id <> $1)`, unpublished)
	require.NoError(t, err)

	relay := outbox.NewRelay(e.db, e.rdb, e.stream)
	n, err := relay.Prune(e.ctx, time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Zero(t, e.count(`SELECT count(*) FROM outbox WHERE event_id = $1`, old))

	n, err = relay.Prune(e.ctx, 0)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM outbox JOIN outbox_pending USING (id) WHERE event_id = $1`, unpublished))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM outbox`))
}

func TestRunFailsFastWithoutTables(t *testing.T) {
	t.Parallel()
	e := newBareEnv(t)
	for name, run := range map[string]func(context.Context) error{
		"relay":    outbox.NewRelay(e.db, e.rdb, e.stream).Run,
		"consumer": outbox.NewConsumer(e.db, e.rdb, e.stream, "g", "m1", (&recorder{}).handler("m1")).Run,
	} {
		var pgErr *pgconn.PgError
		require.ErrorAs(t, run(e.ctx), &pgErr, name)
		require.Equal(t, "42P01", pgErr.Code, name) // undefined_table
	}
}

// A transaction that took its event's id before others and commits after they were published
// still has its event published: a pass looks a little below the relay's last batch, and every
// second one from the beginning, which finds an event far below (here, more ids than the
// margin below).
func TestRelayPublishesARowCommittedAfterLaterOnes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := uuid.New()
	late, err := e.db.Begin(e.ctx)
	require.NoError(t, err)
	defer late.Rollback(e.ctx)
	require.NoError(t, outbox.Enqueue(e.ctx, late, outbox.Event{Type: "contact.created", OrgID: org, Payload: wrapperspb.String("late")}))
	events := make([]outbox.Event, outbox.LateIDs+1)
	for i := range events {
		events[i] = outbox.Event{Type: "contact.created", OrgID: org, Payload: wrapperspb.String("early")}
	}
	require.NoError(t, pgx.BeginFunc(e.ctx, e.db, func(tx pgx.Tx) error { return outbox.EnqueueMany(e.ctx, tx, events) }))
	e.startRelay(outbox.WithBatchSize(1000))
	e.waitPublished(int64(len(events)))
	require.NoError(t, late.Commit(e.ctx))
	e.waitPublished(int64(len(events)) + 1)
}

// However many rows were published before it (the entries of their ids stay in
// outbox_pending's index until a vacuum, and this machine's PostgreSQL runs none), the relay's
// next pass reads a number of buffers bounded by the rows it takes and the LateIDs it looks
// back, and reads both tables by key before either was analyzed, in the custom plan and in the
// generic one. The window's dead entries cost some 70 buffers more or less, as an
// earlier scan could or could not mark them dead (other transactions hold the horizon back);
// a pass that walked all 100,000 reads 350 or more.
func TestRelayPassReadsWhatItTakes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := uuid.New()
	events := make([]outbox.Event, 100_000)
	for i := range events {
		events[i] = outbox.Event{Type: "contact.created", OrgID: org, Payload: wrapperspb.String("x")}
	}
	require.NoError(t, pgx.BeginFunc(e.ctx, e.db, func(tx pgx.Tx) error { return outbox.EnqueueMany(e.ctx, tx, events) }))
	relay := outbox.NewRelay(e.db, e.rdb, e.stream, outbox.WithBatchSize(1000))
	for {
		n, err := relay.PublishOnce(e.ctx)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	require.NoError(t, pgx.BeginFunc(e.ctx, e.db, func(tx pgx.Tx) error { return outbox.EnqueueMany(e.ctx, tx, events[:10]) }))

	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		t.Run(mode, func(t *testing.T) {
			err := pgx.BeginFunc(e.ctx, e.db, func(tx pgx.Tx) error { // rolled back below: EXPLAIN ANALYZE deletes
				if _, err := tx.Exec(e.ctx, `SET LOCAL plan_cache_mode = `+mode); err != nil {
					return err
				}
				var plan []struct {
					Plan struct {
						Hit  int `json:"Shared Hit Blocks"`
						Read int `json:"Shared Read Blocks"`
					}
				}
				var raw []byte
				if err := tx.QueryRow(e.ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+outbox.TakeWaiting, 1000, relay.From()).Scan(&raw); err != nil {
					return err
				}
				require.NotContains(t, string(raw), "Seq Scan")
				require.NoError(t, json.Unmarshal(raw, &plan))
				require.Less(t, plan[0].Plan.Hit+plan[0].Plan.Read, 260, "%s", raw)
				var taken int
				require.NoError(t, tx.QueryRow(e.ctx, `SELECT 10 - count(*) FROM outbox_pending`).Scan(&taken))
				require.Equal(t, 10, taken)
				return errRollBack
			})
			require.ErrorIs(t, err, errRollBack)
		})
	}
}

var errRollBack = errors.New("roll back")
