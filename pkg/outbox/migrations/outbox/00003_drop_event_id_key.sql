-- +goose Up
-- An event id is a UUIDv7 that Enqueue makes as it writes the row, so it is unique by how it
-- is made; no statement looks a row up by it. Its unique index was one more index entry, and
-- its WAL, for every event written.
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_event_id_key;

-- +goose Down
ALTER TABLE outbox ADD CONSTRAINT outbox_event_id_key UNIQUE (event_id);
