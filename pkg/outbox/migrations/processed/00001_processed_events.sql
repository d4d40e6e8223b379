-- +goose Up
-- The events a consumer has handled, in its own schema. IF NOT EXISTS because databases
-- created before these migrations got the same table from the service's own 00001. Column
-- consumer holds the consumer group name, so every instance of a group shares one record of
-- what it has handled.
CREATE TABLE IF NOT EXISTS processed_events (
    consumer     text NOT NULL,
    event_id     uuid NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);

-- +goose Down
DROP TABLE processed_events;
