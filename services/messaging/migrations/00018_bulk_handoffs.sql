-- +goose Up
-- The bulk batches a campaign or poll handed over, each by a digest of its messages' dedupe
-- keys: a QueueBulk retried (the caller timed out after messaging committed, or a campaign's
-- hand-off resumed after a restart) finds its digest here and stores and counts nothing again,
-- so source_numbers.assigned, which a pool's "least busy" number is picked by, counts each
-- message once. One small row per batch (a thousand messages), kept with the source's messages.
CREATE TABLE bulk_handoffs (
    organization_id uuid NOT NULL,
    source_kind     text NOT NULL,
    source_id       text NOT NULL,
    keys_digest     bytea NOT NULL,
    PRIMARY KEY (organization_id, source_kind, source_id, keys_digest)
);

-- +goose Down
DROP TABLE bulk_handoffs;
