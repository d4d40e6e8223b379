package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/chorus-sms/chorus/pkg/wait"
)

// Relay publishes a producer's committed outbox rows to its stream. Several relays may run on
// one outbox (one per replica): each claims a different batch.
type Relay struct {
	pool   *pgxpool.Pool
	rdb    *redis.Client
	stream string
	cfg    settings
	log    *slog.Logger
	// from is where a pass starts looking for waiting ids (see publish); lastFull is when a
	// pass last looked from the start.
	from     int64
	lastFull time.Time
}

// A pass looks for waiting ids from lateIDs below the first id of the relay's last batch: a
// row whose transaction took its id before that batch's rows and committed after them is found
// by the next pass, at the cost of walking the index entries of at most lateIDs published ids.
// Every rescanEvery a pass starts from the beginning, for a row that committed later still.
const (
	lateIDs     = 10_000
	rescanEvery = time.Second
)

// NewRelay returns a relay from the outbox table of pool's schema (pgdb.WithOutbox) to stream
// (see StreamName). Options: WithBatchSize, WithPollInterval, WithMaxLen, WithRetention,
// WithRetryBackoff, WithLogger.
func NewRelay(pool *pgxpool.Pool, rdb *redis.Client, stream string, opts ...Option) *Relay {
	cfg := newSettings(opts)
	return &Relay{pool: pool, rdb: rdb, stream: stream, cfg: cfg, log: cfg.log.With("stream", stream)}
}

// Run publishes until ctx is canceled, then returns nil. It returns an error at once when its
// first pass fails (no outbox table, Redis unreachable), so a misconfigured service stops at
// start; later failures are logged and retried with backoff.
func (r *Relay) Run(ctx context.Context) error {
	n, err := r.publish(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if r.cfg.retention > 0 {
		wg.Go(func() {
			pruneLoop(ctx, r.log, func(ctx context.Context) (int64, error) { return r.Prune(ctx, r.cfg.retention) })
		})
	}
	var failures int64
	for {
		delay := r.cfg.pollInterval
		switch {
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			failures++
			delay = r.cfg.backoff(failures)
			r.log.WarnContext(ctx, "outbox: publish failed", "err", err, "retry_in", delay)
		case n == r.cfg.batchSize:
			failures, delay = 0, 0 // more rows are likely waiting
		default:
			failures = 0
		}
		if !wait.For(ctx, delay) {
			return nil
		}
		n, err = r.publish(ctx)
	}
}

// takeWaiting deletes up to $1 waiting ids from $2 on and returns their rows, in order. Both
// tables are read by key (the ids as an array, not a join), so the plan does not depend on
// statistics of rows loaded since the last ANALYZE.
const takeWaiting = `
	WITH taken AS (
		DELETE FROM outbox_pending WHERE id = ANY(ARRAY(
			SELECT id FROM outbox_pending WHERE id >= $2 ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED))
		RETURNING id)
	SELECT o.id, o.event_id, o.event_type, o.organization_id, o.payload
	FROM outbox o WHERE o.id = ANY(ARRAY(SELECT id FROM taken)) ORDER BY o.id`

// publish moves one batch of waiting rows to the stream and returns its size. Their ids are
// deleted from outbox_pending, and so stay locked, until every XADD succeeded and the
// transaction commits; a failure or a crash in between leaves them waiting, to be published
// again.
//
// Ids are taken in order, so a pass starts a little below the first id of the last batch
// (lateIDs): the entries of the ids published before it, which stay in the index until a
// vacuum, are not walked again.
func (r *Relay) publish(ctx context.Context) (int, error) {
	from := r.from
	if time.Since(r.lastFull) >= rescanEvery {
		from, r.lastFull = 0, time.Now()
	}
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("outbox: begin publish: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	rows, err := tx.Query(ctx, takeWaiting, r.cfg.batchSize, from)
	if err != nil {
		return 0, fmt.Errorf("outbox: take waiting rows: %w", err)
	}
	var first int64
	msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Message, error) {
		var (
			id int64
			m  Message
		)
		err := row.Scan(&id, &m.EventID, &m.Type, &m.OrgID, &m.Payload)
		if first == 0 {
			first = id
		}
		return m, err
	})
	if err != nil {
		return 0, fmt.Errorf("outbox: read waiting rows: %w", err)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	if _, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, m := range msgs {
			p.XAdd(ctx, &redis.XAddArgs{Stream: r.stream, MaxLen: r.cfg.maxLen, Approx: true, Values: m.entryValues()})
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("outbox: add to %s: %w", r.stream, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("outbox: commit publish: %w", err)
	}
	r.from = max(first-lateIDs, 0)
	return len(msgs), nil
}

// Prune deletes published outbox rows written more than olderThan ago and returns how many it
// deleted; rows waiting to be published always stay. Run calls it hourly with the retention.
func (r *Relay) Prune(ctx context.Context, olderThan time.Duration) (int64, error) {
	n, err := deleteInBatches(ctx, r.pool, `
		DELETE FROM outbox WHERE id IN (
			SELECT id FROM outbox o WHERE created_at < now() - make_interval(secs => $1)
				AND NOT EXISTS (SELECT FROM outbox_pending p WHERE p.id = o.id)
			LIMIT $2 FOR UPDATE SKIP LOCKED)`, olderThan)
	if err != nil {
		return n, fmt.Errorf("outbox: prune outbox: %w", err)
	}
	return n, nil
}
