package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// FoldEvery is how often pending count changes are folded into the rollups.
const FoldEvery = 200 * time.Millisecond

// foldBatch bounds one fold; a full one is followed by the next at once.
const foldBatch = 10_000

// Fold moves up to foldBatch pending count changes into message_hours and the campaigns'
// outcomes, in one statement: they leave pending_counts exactly when their sums land, and rows
// another folder (a second replica) has taken are skipped, so nothing is counted twice or
// lost. It returns how many it moved.
func Fold(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var moved int
	err := pool.QueryRow(ctx, `WITH moved AS (
			DELETE FROM pending_counts WHERE seq IN (
				SELECT seq FROM pending_counts ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED)
			RETURNING *
		), hours AS (
			INSERT INTO message_hours AS h (organization_id, day, hour, total, sent, delivered, undelivered, failed, received)
			SELECT organization_id, day, hour, sum(total), sum(sent), sum(delivered), sum(undelivered), sum(failed), sum(received)
			FROM moved WHERE campaign_id IS NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
			ON CONFLICT (organization_id, day, hour) DO UPDATE SET total = h.total + excluded.total, sent = h.sent + excluded.sent,
				delivered = h.delivered + excluded.delivered, undelivered = h.undelivered + excluded.undelivered,
				failed = h.failed + excluded.failed, received = h.received + excluded.received
		), outcomes AS (
			INSERT INTO campaigns AS c (organization_id, id, sent, delivered, failed)
			SELECT organization_id, campaign_id, sum(sent), sum(delivered), sum(failed)
			FROM moved WHERE campaign_id IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
			ON CONFLICT (organization_id, id) DO UPDATE SET sent = c.sent + excluded.sent,
				delivered = c.delivered + excluded.delivered, failed = c.failed + excluded.failed
		)
		SELECT count(*) FROM moved`, foldBatch).Scan(&moved)
	if err != nil {
		return 0, fmt.Errorf("fold pending counts: %w", err)
	}
	return moved, nil
}

// FoldLoop folds every FoldEvery until ctx is done; a failure is logged and tried again at
// the next tick (the changes stay pending, and reads still count them).
func FoldLoop(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) {
	t := time.NewTicker(FoldEvery)
	defer t.Stop()
	for {
		n, err := Fold(ctx, pool)
		if err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "analytics: fold failed", "err", err)
		}
		if n == foldBatch {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
