-- +goose Up
-- The numbers a campaign's or poll's bulk batches were given (a number pool, or its one
-- number): how many of its messages each was assigned (the pool's "least busy" is the one
-- given fewest) and sent (the carrier took them), and whether the carrier's refusals took it
-- out of the source's rotation. The campaign detail lists them.
CREATE TABLE source_numbers (
    organization_id uuid NOT NULL,
    source_kind     text NOT NULL,
    source_id       text NOT NULL,
    our_number      text NOT NULL,
    phone_number_id uuid NOT NULL,
    assigned        integer NOT NULL DEFAULT 0,
    sent            integer NOT NULL DEFAULT 0,
    removed_at      timestamptz,
    removed_reason  text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, source_kind, source_id, our_number)
);

-- A number leaving a source's rotation moves the source's queued messages of that number to
-- the others: this finds them without a scan. Only queued messages are in it, through a
-- generated column, so a delivery report (sent to delivered) stays a HOT update (00011).
ALTER TABLE messages ADD COLUMN queued boolean GENERATED ALWAYS AS (status = 'queued') STORED;
CREATE INDEX messages_queued_source ON messages (organization_id, source_kind, source_id, our_number) WHERE queued;

-- +goose Down
DROP INDEX messages_queued_source;
ALTER TABLE messages DROP COLUMN queued;
DROP TABLE source_numbers;
