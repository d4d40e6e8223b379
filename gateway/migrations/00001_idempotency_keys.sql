-- +goose Up
-- The Idempotency-Key records of the POSTs that send or spend (gateway/idempotency.go): a row
-- is written, running, before the request reaches its service and completed with the
-- response, so a retry after a lost answer or a Redis restart replays instead of sending again.
CREATE TABLE idempotency_keys (
    organization_id uuid NOT NULL,
    subject         text NOT NULL,
    key             text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    fingerprint     bytea NOT NULL,  -- SHA-256 of method, path and SHA-256 of the body
    token           uuid NOT NULL,   -- the request holding the row; its completion names it
    state           text NOT NULL CHECK (state IN ('running', 'completed')),
    status          integer,         -- the stored response, once completed
    content_type    text,
    body            bytea,
    created_at      timestamptz NOT NULL DEFAULT now(),  -- the 24 hours run from here
    claimed_at      timestamptz NOT NULL DEFAULT now(),  -- a running row older than the bound is taken over
    PRIMARY KEY (organization_id, subject, key),
    CHECK ((state = 'completed') = (status IS NOT NULL))
);

-- The sweep deletes by age.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
