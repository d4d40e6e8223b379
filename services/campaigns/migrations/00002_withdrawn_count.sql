-- +goose Up
-- Recipients whose message was withdrawn before the carrier saw it (the campaign canceled,
-- the contact deleted meanwhile): neither sent nor failed, yet no longer queued, so a
-- campaign whose last recipients were withdrawn still completes.
ALTER TABLE campaigns ADD COLUMN withdrawn_count integer NOT NULL DEFAULT 0 CHECK (withdrawn_count >= 0);

-- +goose Down
ALTER TABLE campaigns DROP COLUMN withdrawn_count;
