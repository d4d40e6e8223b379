-- +goose Up
-- The outbox a producer writes its events to, in its own schema. IF NOT EXISTS because
-- databases created before these migrations got the same table from the service's own 00001.
-- The partial index keeps the relay's search for unpublished rows cheap however many published
-- rows are retained.
CREATE TABLE IF NOT EXISTS outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        uuid NOT NULL UNIQUE,
    event_type      text NOT NULL,
    organization_id uuid NOT NULL,
    payload         bytea NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    published_at    timestamptz
);
CREATE INDEX IF NOT EXISTS outbox_unpublished ON outbox (id) WHERE published_at IS NULL;

-- +goose Down
DROP TABLE outbox;
