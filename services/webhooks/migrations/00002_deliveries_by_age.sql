-- +goose Up
-- The retention sweep's walk: deliveries no longer pending, oldest first, so each of its
-- bounded batches reads only rows it deletes (or keeps for a recent manual retry's attempt).
CREATE INDEX deliveries_done_by_age ON deliveries (created_at) WHERE status <> 'pending';

-- +goose Down
DROP INDEX deliveries_done_by_age;
