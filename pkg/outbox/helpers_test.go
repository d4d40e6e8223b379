package outbox_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/redistest"
)

const (
	schema  = "events"
	waitFor = 10 * time.Second
	tick    = 10 * time.Millisecond
)

func TestMain(m *testing.M) {
	pgtest.Main(m, redistest.Close)
}

// fast keeps the suite quick: an idle relay looks every 10ms, and a consumer retries after
// 10ms and looks for due retries as often.
var fast = []outbox.Option{
	outbox.WithPollInterval(10 * time.Millisecond),
	outbox.WithRetryBackoff(10*time.Millisecond, 40*time.Millisecond),
}

// env is one test's database (a schema holding the producer's and the consumer's tables) and
// Redis stream, in a Redis database of its own; both removed at cleanup.
type env struct {
	t      *testing.T
	ctx    context.Context
	db     *pgxpool.Pool
	rdb    *redis.Client
	stream string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := newBareEnv(t)
	require.NoError(t, pgdb.Migrate(e.ctx, e.db, schema, nil, pgdb.WithOutbox(), pgdb.WithProcessedEvents()))
	_, err := e.db.Exec(e.ctx, `CREATE TABLE handled (event_id uuid NOT NULL, member text NOT NULL, type text NOT NULL);`)
	require.NoError(t, err)
	return e
}

// newBareEnv is newEnv without any table.
func newBareEnv(t *testing.T) *env {
	t.Helper()
	ctx := t.Context()
	db, err := pgdb.Open(ctx, pgtest.NewDatabase(t), schema)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	_, err = db.Exec(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)

	_, rdb := redistest.New(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	stream := outbox.StreamName("test" + hex.EncodeToString(b))
	return &env{t: t, ctx: ctx, db: db, rdb: rdb, stream: stream}
}

// enqueue commits one event whose payload is text and returns its event id.
func (e *env) enqueue(typ string, org uuid.UUID, text string) uuid.UUID {
	e.t.Helper()
	var id uuid.UUID
	err := pgx.BeginFunc(e.ctx, e.db, func(tx pgx.Tx) error {
		if err := outbox.Enqueue(e.ctx, tx, outbox.Event{Type: typ, OrgID: org, Payload: wrapperspb.String(text)}); err != nil {
			return err
		}
		return tx.QueryRow(e.ctx, `SELECT event_id FROM outbox ORDER BY id DESC LIMIT 1`).Scan(&id)
	})
	require.NoError(e.t, err)
	return id
}

// run starts fn (a Run method) in the background and returns a function that stops it and
// checks it returned nil; cleanup stops it too.
func (e *env) run(fn func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(e.t, err)
		case <-time.After(waitFor):
			e.t.Error("Run did not return after its context was canceled")
		}
	})
	e.t.Cleanup(stop)
	return stop
}

func (e *env) startRelay(opts ...outbox.Option) (stop func()) {
	return e.run(outbox.NewRelay(e.db, e.rdb, e.stream, append(fast, opts...)...).Run)
}

func (e *env) startConsumer(group, name string, h outbox.Handler, opts ...outbox.Option) (stop func()) {
	return e.run(outbox.NewConsumer(e.db, e.rdb, e.stream, group, name, h, append(fast, opts...)...).Run)
}

// waitPublished waits until no outbox row waits to be published and the stream holds n entries.
func (e *env) waitPublished(n int64) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		var waiting int
		err := e.db.QueryRow(e.ctx, `SELECT count(*) FROM outbox_pending`).Scan(&waiting)
		return err == nil && waiting == 0 && e.rdb.XLen(e.ctx, e.stream).Val() == n
	}, waitFor, tick)
}

// waitDrained waits until group has been delivered the stream's last entry and has nothing
// pending: every entry was handled, skipped as a duplicate or dead-lettered.
func (e *env) waitDrained(group string) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		last, err := e.rdb.XRevRangeN(e.ctx, e.stream, "+", "-", 1).Result()
		if err != nil || len(last) == 0 {
			return false
		}
		groups, err := e.rdb.XInfoGroups(e.ctx, e.stream).Result()
		if err != nil {
			return false
		}
		for _, g := range groups {
			if g.Name == group {
				return g.Pending == 0 && g.LastDeliveredID == last[0].ID
			}
		}
		return false
	}, waitFor, tick)
}

// count runs a count(*) query.
func (e *env) count(query string, args ...any) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.db.QueryRow(e.ctx, query, args...).Scan(&n))
	return n
}

// recorder is a handler that writes each event it handles into table handled, in the
// consumer's transaction, and counts its calls per event (including failed ones).
type recorder struct {
	// fail, when set, decides whether the call-th call for m fails (or panics).
	fail func(m outbox.Message, call int) error

	mu    sync.Mutex
	calls map[uuid.UUID]int
}

func (r *recorder) handler(member string) outbox.Handler {
	return func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		r.mu.Lock()
		if r.calls == nil {
			r.calls = map[uuid.UUID]int{}
		}
		r.calls[m.EventID]++
		call := r.calls[m.EventID]
		r.mu.Unlock()
		if r.fail != nil {
			if err := r.fail(m, call); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO handled (event_id, member, type) VALUES ($1, $2, $3)`, m.EventID, member, m.Type); err != nil {
			return fmt.Errorf("record handled: %w", err)
		}
		return nil
	}
}

func (r *recorder) callsOf(id uuid.UUID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[id]
}
