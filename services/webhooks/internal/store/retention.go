package store

import (
	"context"
	"fmt"
	"time"
)

// PruneDeliveries deletes, in batches of at most batch rows (each its own statement, so no
// transaction holds many locks or a long snapshot), the deliveries created before cutoff that
// are no longer pending and have had no attempt since cutoff (a manual retry's), with their
// attempts (ON DELETE CASCADE). A pending delivery is never deleted, whatever its age. It
// answers how many it deleted.
func (s *Store) PruneDeliveries(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `
			DELETE FROM deliveries d USING (
				SELECT o.organization_id, o.id FROM deliveries o
				WHERE o.status <> 'pending' AND o.created_at < $1
					AND NOT EXISTS (SELECT 1 FROM attempts a
						WHERE a.organization_id = o.organization_id AND a.delivery_id = o.id AND a.attempted_at >= $1)
				ORDER BY o.created_at
				LIMIT $2
				FOR UPDATE SKIP LOCKED
			) old
			WHERE d.organization_id = old.organization_id AND d.id = old.id AND d.status <> 'pending'`, cutoff, batch)
		if err != nil {
			return total, fmt.Errorf("prune deliveries (%d deleted): %w", total, err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}
