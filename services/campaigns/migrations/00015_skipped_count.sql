-- +goose Up
-- Recipients skipped for the organization's frequency cap (messaging withdrew their message,
-- FREQUENCY_CAPPED, before anything was paid): neither sent, failed nor withdrawn, yet no
-- longer queued, so sent + failed + withdrawn + skipped = total once the campaign completes.
ALTER TABLE campaigns ADD COLUMN skipped_count integer NOT NULL DEFAULT 0 CHECK (skipped_count >= 0);

-- +goose Down
ALTER TABLE campaigns DROP COLUMN skipped_count;
