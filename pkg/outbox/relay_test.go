package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

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
	// the stream and the row is still unpublished.
	_, err := e.db.Exec(e.ctx, `UPDATE outbox SET published_at = NULL`)
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
	e.enqueue("contact.created", org, "unpublished")
	_, err := e.db.Exec(e.ctx, `UPDATE outbox SET published_at = now() - interval '2 hours' WHERE event_id = $1`, old)
	require.NoError(t, err)
	_, err = e.db.Exec(e.ctx, `UPDATE outbox SET published_at = now() - interval '1 minute' WHERE event_id = $1`, recent)
	require.NoError(t, err)

	relay := outbox.NewRelay(e.db, e.rdb, e.stream)
	n, err := relay.Prune(e.ctx, time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Zero(t, e.count(`SELECT count(*) FROM outbox WHERE event_id = $1`, old))

	n, err = relay.Prune(e.ctx, 0)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM outbox WHERE published_at IS NULL`))
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
