-- +goose Up
-- Clicks on the campaign's short links, counted from messaging's link.clicked events (each
-- applied once, in the consumer's transaction).
ALTER TABLE campaigns ADD COLUMN click_count integer NOT NULL DEFAULT 0 CHECK (click_count >= 0);

-- +goose Down
ALTER TABLE campaigns DROP COLUMN click_count;
