package outbox

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/chorus-sms/chorus/pkg/wait"
)

// maxBlock bounds one blocking read, and so how long Run takes to return once ctx is canceled
// (go-redis does not interrupt a blocked read).
const maxBlock = time.Second

// Handler applies one event inside tx, the transaction (a savepoint of the consumer's batch
// transaction) that also records the event as processed by the group. Returning an error rolls
// both back and leaves the entry pending to be retried with backoff; the batch's other events
// are applied.
type Handler func(ctx context.Context, tx pgx.Tx, m Message) error

// BatchHandler applies several events inside tx, the transaction that also records them as
// processed by the group (WithBatchHandler); the events are those not processed before, in
// stream order. Returning an error rolls the whole call back.
type BatchHandler func(ctx context.Context, tx pgx.Tx, ms []Message) error

// Consumer handles a stream's entries as one member of a consumer group, a read's worth at a
// time in one transaction.
// Run more members (in this process or others) to share the work.
type Consumer struct {
	pool   *pgxpool.Pool
	rdb    *redis.Client
	stream string
	group  string
	name   string
	handle Handler
	cfg    settings
	log    *slog.Logger

	nextScan time.Time // when Run next looks for pending entries due for a retry
}

// MemberName is a consumer name unique among a group's running members: the host name (the
// pod's, on Kubernetes) and the process id. Replicas sharing one name would each treat the
// others' pending entries as their own.
func MemberName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// NewConsumer returns the member consumerName of group on stream; handle runs in transactions
// on pool, whose schema must hold processed_events (pgdb.WithProcessedEvents). The group name
// is what processed_events records, so every member of a group shares one record of what it
// handled; consumerName must be unique among the group's running members (host name and pid, say).
// Options: WithBatchSize, WithRetryBackoff, WithClaimIdle, WithMaxDeliveries, WithMaxLen
// (of the dead-letter stream), WithRetention, WithTypes, WithFilter, WithLogger.
func NewConsumer(pool *pgxpool.Pool, rdb *redis.Client, stream, group, consumerName string, handle Handler, opts ...Option) *Consumer {
	cfg := newSettings(opts)
	return &Consumer{
		pool: pool, rdb: rdb, stream: stream, group: group, name: consumerName, handle: handle, cfg: cfg,
		log: cfg.log.With("stream", stream, "group", group, "consumer", consumerName),
	}
}

// Run consumes until ctx is canceled and returns nil within a second of it. It first creates
// the group if it does not exist, at the start of the stream so that a new group replays
// every entry the stream holds, and checks that processed_events exists; a failure there is
// returned at once, so a misconfigured service stops at start. Later failures are logged and
// retried with backoff. Run must not be called again before it returns.
func (c *Consumer) Run(ctx context.Context) error {
	if err := c.start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if c.cfg.retention > 0 {
		wg.Go(func() {
			pruneLoop(ctx, c.log, func(ctx context.Context) (int64, error) { return c.Prune(ctx, c.cfg.retention) })
		})
	}
	var failures int64
	for {
		err := c.poll(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			failures = 0
			continue
		}
		failures++
		delay := c.cfg.backoff(failures)
		c.log.WarnContext(ctx, "outbox: consume failed", "err", err, "retry_in", delay)
		if !wait.For(ctx, delay) {
			return nil
		}
	}
}

func (c *Consumer) start(ctx context.Context) error {
	if c.stream == "" || c.group == "" || c.name == "" || c.handle == nil {
		return errors.New("outbox: a consumer needs a stream, group, name and handler")
	}
	if _, err := c.pool.Exec(ctx, `SELECT FROM processed_events LIMIT 0`); err != nil {
		return fmt.Errorf("outbox: check processed_events: %w", err)
	}
	return c.createGroup(ctx)
}

// createGroup creates the group at the start of the stream (creating the stream too) unless it
// exists; an existing group keeps its position.
func (c *Consumer) createGroup(ctx context.Context) error {
	err := c.rdb.XGroupCreateMkStream(ctx, c.stream, c.group, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return fmt.Errorf("outbox: create group %s on %s: %w", c.group, c.stream, err)
	}
	return nil
}

// poll retries the pending entries that are due, when it is time to look for them, then
// handles new entries, waiting for some until the next look at most.
func (c *Consumer) poll(ctx context.Context) error {
	err := c.retryAndRead(ctx)
	if redis.HasErrorPrefix(err, "NOGROUP") {
		// The stream was deleted or Redis lost its data; start over with what the stream holds.
		c.log.WarnContext(ctx, "outbox: consumer group missing; creating it again", "err", err)
		return c.createGroup(ctx)
	}
	return err
}

func (c *Consumer) retryAndRead(ctx context.Context) error {
	if !time.Now().Before(c.nextScan) {
		if err := c.retryPending(ctx); err != nil {
			return err
		}
		c.nextScan = time.Now().Add(min(c.cfg.retryMin, maxBlock))
	}
	res, err := c.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group:    c.group,
		Consumer: c.name,
		Streams:  []string{c.stream, ">"},
		Count:    int64(c.cfg.batchSize),
		Block:    max(time.Until(c.nextScan), time.Millisecond), // BLOCK 0 would wait forever
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil // nothing new before the timeout
	}
	if err != nil {
		return fmt.Errorf("outbox: read %s: %w", c.stream, err)
	}
	for _, s := range res {
		if err := c.process(ctx, s.Messages, 1); err != nil {
			return err
		}
	}
	return nil
}

// retryPending takes over the group's pending entries that are due: this consumer's own once
// the backoff for their delivery count has passed, another member's once it has also sat
// unacknowledged for the claim idle time (that member is presumably gone).
func (c *Consumer) retryPending(ctx context.Context) error {
	start := "-"
	for {
		pending, err := c.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: c.stream, Group: c.group, Idle: c.cfg.retryMin, Start: start, End: "+", Count: int64(c.cfg.batchSize),
		}).Result()
		if err != nil {
			return fmt.Errorf("outbox: list pending entries of %s: %w", c.stream, err)
		}
		for _, p := range pending {
			due := c.cfg.backoff(p.RetryCount)
			if p.Consumer != c.name {
				due = max(due, c.cfg.claimIdle)
			}
			if p.Idle < due {
				continue
			}
			// MinIdle makes the claim a no-op when another member took the entry meanwhile.
			claimed, err := c.rdb.XClaim(ctx, &redis.XClaimArgs{
				Stream: c.stream, Group: c.group, Consumer: c.name, MinIdle: due, Messages: []string{p.ID},
			}).Result()
			if err != nil {
				return fmt.Errorf("outbox: claim %s: %w", p.ID, err)
			}
			if err := c.process(ctx, claimed, p.RetryCount+1); err != nil {
				return err
			}
		}
		if len(pending) < c.cfg.batchSize {
			return nil
		}
		start = "(" + pending[len(pending)-1].ID
	}
}

// process handles delivered entries, each delivered that many times, and acknowledges those
// whose effect committed. A handler failure leaves its entry pending for a retry, or
// dead-letters it on its last delivery; only failures of PostgreSQL or Redis, which say
// nothing about an entry, are returned.
func (c *Consumer) process(ctx context.Context, entries []redis.XMessage, deliveries int64) error {
	msgs := make([]Message, 0, len(entries))
	parsed := make([]redis.XMessage, 0, len(entries))
	var unwanted []string
	for _, e := range entries {
		m, err := parseEntry(e.Values)
		if err != nil {
			if err := c.deadLetter(ctx, e, deliveries, fmt.Errorf("malformed entry: %w", err)); err != nil {
				return err
			}
			continue
		}
		if (c.cfg.types != nil && !c.cfg.types[m.Type]) || (c.cfg.keep != nil && !c.cfg.keep(m)) {
			unwanted = append(unwanted, e.ID)
			continue
		}
		msgs, parsed = append(msgs, m), append(parsed, e)
	}
	if len(unwanted) > 0 {
		if err := c.rdb.XAck(ctx, c.stream, c.group, unwanted...).Err(); err != nil {
			return fmt.Errorf("outbox: ack %d entries of other types: %w", len(unwanted), err)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	failed, err := c.applyPartitioned(ctx, msgs)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	acks := make([]string, 0, len(parsed))
	for i, e := range parsed {
		switch {
		case failed[i] == nil:
			acks = append(acks, e.ID)
		case deliveries >= c.cfg.maxDeliveries:
			if err := c.deadLetter(ctx, e, deliveries, failed[i]); err != nil {
				return err
			}
		default:
			c.log.WarnContext(ctx, "outbox: handler failed; will retry", "entry_id", e.ID, "event_id", msgs[i].EventID,
				"type", msgs[i].Type, "deliveries", deliveries, "err", failed[i])
		}
	}
	if len(acks) > 0 {
		if err := c.rdb.XAck(ctx, c.stream, c.group, acks...).Err(); err != nil {
			// Still pending: they are redelivered and then skipped as already processed.
			return fmt.Errorf("outbox: ack %d entries: %w", len(acks), err)
		}
	}
	return nil
}

// apply records each of msgs as processed by the group and runs the handler for it, all in
// one transaction (one commit for a read's worth of events, not one each), each event under a
// savepoint of its own: a failing handler rolls back its own event only, answered in failed
// (nil for an event applied or already processed). An event the group already processed skips
// the handler; if another member is processing it right now, the insert waits for that
// transaction and then sees its row. An error of the consumer's own statements, or of a
// batch's commit, is returned and nothing of the batch is applied: its entries stay pending.
// With a batch handler, even a single event goes to it first: a producer's event may carry
// many changes, and the batch path needs no savepoint.
func (c *Consumer) apply(ctx context.Context, msgs []Message) (failed []error, err error) {
	if c.cfg.batch != nil && len(msgs) > 0 {
		done, err := c.applyBatch(ctx, msgs)
		if err != nil || done {
			return make([]error, len(msgs)), err
		}
		// The batch failed as a whole: find which event by applying them one at a time.
	}
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("outbox: begin: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	failed = make([]error, len(msgs))
	for i, m := range msgs {
		sp, err := tx.Begin(ctx) // a savepoint
		if err != nil {
			return nil, fmt.Errorf("outbox: savepoint: %w", err)
		}
		fresh := c.cfg.idempotent[m.Type]
		if !fresh {
			tag, err := sp.Exec(ctx, `INSERT INTO processed_events (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
				c.group, m.EventID)
			if err != nil {
				return nil, fmt.Errorf("outbox: record %s as processed: %w", m.EventID, err)
			}
			fresh = tag.RowsAffected() > 0
		}
		if fresh {
			failed[i] = c.runHandler(ctx, sp, m)
		}
		if failed[i] != nil {
			err = sp.Rollback(ctx)
		} else {
			err = sp.Commit(ctx) // releases the savepoint
		}
		if err != nil {
			return nil, fmt.Errorf("outbox: end savepoint of %s: %w", m.EventID, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		if len(msgs) == 1 && failed[0] == nil {
			// The handler's work did not commit (a deferred constraint, say): its failure,
			// retried and in the end dead-lettered. A batch's entries are retried one by one,
			// so a poison entry comes here alone.
			failed[0] = fmt.Errorf("commit: %w", err)
			return failed, nil
		}
		return nil, fmt.Errorf("outbox: commit %d events: %w", len(msgs), err)
	}
	return failed, nil
}

// applyPartitioned applies msgs in one transaction, or, WithPartitions, in one transaction
// per partition at once, and answers apply's failed for msgs as a whole.
func (c *Consumer) applyPartitioned(ctx context.Context, msgs []Message) ([]error, error) {
	n := c.cfg.partitions
	if n <= 1 || len(msgs) < 2 {
		return c.apply(ctx, msgs)
	}
	parts := make([][]int, n)
	for i, m := range msgs {
		h := fnv.New32a()
		_, _ = h.Write([]byte(c.cfg.partitionKey(m)))
		p := h.Sum32() % uint32(n)
		parts[p] = append(parts[p], i)
	}
	failed := make([]error, len(msgs))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for p, idx := range parts {
		if len(idx) == 0 {
			continue
		}
		wg.Go(func() {
			part := make([]Message, len(idx))
			for j, i := range idx {
				part[j] = msgs[i]
			}
			f, err := c.apply(ctx, part)
			if err != nil {
				errs[p] = err
				return
			}
			for j, i := range idx {
				failed[i] = f[j]
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return failed, nil
}

// applyBatch records msgs as processed in one statement and applies those not processed
// before with the batch handler, all in one transaction. done is false, with nothing applied,
// when the handler or the commit failed (the caller then applies the events one by one); an
// error of the consumer's own statements is returned.
func (c *Consumer) applyBatch(ctx context.Context, msgs []Message) (done bool, err error) {
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("outbox: begin: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	isNew, err := c.record(ctx, tx, msgs)
	if err != nil {
		return false, err
	}
	fresh := make([]Message, 0, len(isNew))
	for _, m := range msgs {
		if isNew[m.EventID] {
			fresh = append(fresh, m)
			isNew[m.EventID] = false // an event read twice in one batch is applied once
		}
	}
	if len(fresh) > 0 {
		if err := c.runBatch(ctx, tx, fresh); err != nil {
			c.log.DebugContext(ctx, "outbox: batch handler failed; applying its events one by one", "events", len(fresh), "err", err)
			return false, nil
		}
	}
	if err := tx.Commit(ctx); err != nil {
		c.log.DebugContext(ctx, "outbox: batch commit failed; applying its events one by one", "events", len(fresh), "err", err)
		return false, nil
	}
	return true, nil
}

// record inserts the processed_events rows of msgs in one statement and answers which events
// are new to the group: those it recorded, and every event of an idempotent type.
func (c *Consumer) record(ctx context.Context, tx pgx.Tx, msgs []Message) (map[uuid.UUID]bool, error) {
	isNew := make(map[uuid.UUID]bool, len(msgs))
	ids := make([]uuid.UUID, 0, len(msgs))
	for _, m := range msgs {
		if c.cfg.idempotent[m.Type] {
			isNew[m.EventID] = true
		} else {
			ids = append(ids, m.EventID)
		}
	}
	if len(ids) == 0 {
		return isNew, nil
	}
	rows, err := tx.Query(ctx, `INSERT INTO processed_events (consumer, event_id) SELECT $1, unnest($2::uuid[])
		ON CONFLICT DO NOTHING RETURNING event_id`, c.group, ids)
	if err != nil {
		return nil, fmt.Errorf("outbox: record %d events as processed: %w", len(ids), err)
	}
	recorded, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("outbox: record %d events as processed: %w", len(ids), err)
	}
	for _, id := range recorded {
		isNew[id] = true
	}
	return isNew, nil
}

// runBatch is runHandler for the batch handler.
func (c *Consumer) runBatch(ctx context.Context, tx pgx.Tx, ms []Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("batch handler panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return c.cfg.batch(ctx, tx, ms)
}

// runHandler turns a handler panic into an error, so a bad event is retried and dead-lettered
// like any failure instead of crashing each member of the group in turn.
func (c *Consumer) runHandler(ctx context.Context, tx pgx.Tx, m Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return c.handle(ctx, tx, m)
}

// Prune deletes the group's processed_events rows older than olderThan and returns how many it
// deleted. An event older than that is no longer recognized as a duplicate, so keep it longer
// than an entry can stay pending or be republished. Run calls it hourly with the retention.
func (c *Consumer) Prune(ctx context.Context, olderThan time.Duration) (int64, error) {
	n, err := deleteInBatches(ctx, c.pool, `
		DELETE FROM processed_events WHERE consumer = $3 AND event_id IN (
			SELECT event_id FROM processed_events
			WHERE consumer = $3 AND processed_at < now() - make_interval(secs => $1)
			LIMIT $2 FOR UPDATE SKIP LOCKED)`, olderThan, c.group)
	if err != nil {
		return n, fmt.Errorf("outbox: prune processed_events: %w", err)
	}
	return n, nil
}
