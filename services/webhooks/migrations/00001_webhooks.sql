-- +goose Up
-- An organization's endpoints. secret is the signing key (the bytes after whsec_). An endpoint
-- failing since failing_since (no 2xx since then) for longer than the disable bound is
-- disabled: disabled_at and disabled_reason say when and why.
CREATE TABLE endpoints (
    organization_id uuid NOT NULL,
    id uuid NOT NULL,
    url text NOT NULL,
    events text[] NOT NULL CHECK (cardinality(events) > 0),
    secret bytea NOT NULL,
    failing_since timestamptz,
    disabled_at timestamptz,
    disabled_reason text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, id)
);

-- One event for one endpoint. id is the webhook-id of every attempt; event_key makes the
-- fan-out of a redelivered event a no-op. round grows with each manual retry, so a job of an
-- earlier round that is still scheduled does nothing. payload is the exact body signed.
CREATE TABLE deliveries (
    organization_id uuid NOT NULL,
    id uuid NOT NULL,
    endpoint_id uuid NOT NULL,
    event_key text NOT NULL,
    event_type text NOT NULL,
    payload bytea NOT NULL,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
    round int NOT NULL DEFAULT 1,
    attempt_count int NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, id),
    UNIQUE (organization_id, endpoint_id, event_key),
    FOREIGN KEY (organization_id, endpoint_id) REFERENCES endpoints ON DELETE CASCADE
);
CREATE INDEX deliveries_by_endpoint ON deliveries (organization_id, endpoint_id, id DESC);

-- Each try of a delivery: the status code (null when no response came) or the error.
CREATE TABLE attempts (
    organization_id uuid NOT NULL,
    delivery_id uuid NOT NULL,
    n int NOT NULL,
    attempted_at timestamptz NOT NULL,
    status_code int,
    error text,
    duration_ms int NOT NULL,
    PRIMARY KEY (organization_id, delivery_id, n),
    FOREIGN KEY (organization_id, delivery_id) REFERENCES deliveries ON DELETE CASCADE
);

-- +goose Down
DROP TABLE attempts;
DROP TABLE deliveries;
DROP TABLE endpoints;
