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
)

// Relay publishes a producer's committed outbox rows to its stream. Several relays may run on
// one outbox (one per replica): each claims a different batch.
type Relay struct {
	pool   *pgxpool.Pool
	rdb    *redis.Client
	stream string
	cfg    settings
	log    *slog.Logger
}

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
		wait := r.cfg.pollInterval
		switch {
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			failures++
			wait = r.cfg.backoff(failures)
			r.log.WarnContext(ctx, "outbox: publish failed", "err", err, "retry_in", wait)
		case n == r.cfg.batchSize:
			failures, wait = 0, 0 // more rows are likely waiting
		default:
			failures = 0
		}
		if !sleep(ctx, wait) {
			return nil
		}
		n, err = r.publish(ctx)
	}
}

// publish moves one batch of unpublished rows to the stream and returns its size. The rows
// stay locked until they are marked published, after every XADD succeeded; a failure or a
// crash in between leaves them unpublished, to be published again.
func (r *Relay) publish(ctx context.Context) (int, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("outbox: begin publish: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	rows, err := tx.Query(ctx, `
		SELECT id, event_id, event_type, organization_id, payload FROM outbox
		WHERE published_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, r.cfg.batchSize)
	if err != nil {
		return 0, fmt.Errorf("outbox: claim unpublished rows: %w", err)
	}
	var ids []int64
	msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Message, error) {
		var (
			id int64
			m  Message
		)
		err := row.Scan(&id, &m.EventID, &m.Type, &m.OrgID, &m.Payload)
		ids = append(ids, id)
		return m, err
	})
	if err != nil {
		return 0, fmt.Errorf("outbox: read unpublished rows: %w", err)
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
	if _, err := tx.Exec(ctx, `UPDATE outbox SET published_at = now() WHERE id = ANY($1)`, ids); err != nil {
		return 0, fmt.Errorf("outbox: mark published: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("outbox: commit publish: %w", err)
	}
	return len(msgs), nil
}

// Prune deletes outbox rows published more than olderThan ago and returns how many it
// deleted; unpublished rows always stay. Run calls it hourly with the retention.
func (r *Relay) Prune(ctx context.Context, olderThan time.Duration) (int64, error) {
	n, err := deleteInBatches(ctx, r.pool, `
		DELETE FROM outbox WHERE id IN (
			SELECT id FROM outbox WHERE published_at < now() - make_interval(secs => $1)
			LIMIT $2 FOR UPDATE SKIP LOCKED)`, olderThan)
	if err != nil {
		return n, fmt.Errorf("outbox: prune outbox: %w", err)
	}
	return n, nil
}
