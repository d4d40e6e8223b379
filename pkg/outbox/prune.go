package outbox

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// pruneInterval is how often Run deletes rows past the retention.
const pruneInterval = time.Hour

// pruneBatch bounds the rows one DELETE removes, so pruning a large backlog never holds many
// locks or one long transaction.
const pruneBatch = 1000

// deleteInBatches runs query, a DELETE of at most $2 rows older than $1 seconds (further
// arguments follow), until it deletes fewer than a batch, and returns the total.
func deleteInBatches(ctx context.Context, pool *pgxpool.Pool, query string, olderThan time.Duration, args ...any) (int64, error) {
	args = append([]any{olderThan.Seconds(), pruneBatch}, args...)
	var total int64
	for {
		tag, err := pool.Exec(ctx, query, args...)
		if err != nil {
			return total, err
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < pruneBatch {
			return total, nil
		}
	}
}

// pruneLoop calls prune now and then every pruneInterval until ctx is done. It runs beside
// the publishing or consuming loop so a large backlog of old rows never delays events.
func pruneLoop(ctx context.Context, log *slog.Logger, prune func(context.Context) (int64, error)) {
	t := time.NewTicker(pruneInterval)
	defer t.Stop()
	for {
		if n, err := prune(ctx); err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "outbox: prune failed", "err", err)
		} else if n > 0 {
			log.DebugContext(ctx, "outbox: pruned rows", "rows", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
