-- +goose Up
-- Test copies each organization sent per UTC day, against its daily allowance: taken in one
-- statement (an upsert whose update only applies while the total stays within the allowance),
-- so concurrent test sends cannot exceed it. One small row per organization and day.
CREATE TABLE test_send_allowance (
    organization_id uuid    NOT NULL,
    day             date    NOT NULL,
    used            integer NOT NULL,
    PRIMARY KEY (organization_id, day)
);

-- +goose Down
DROP TABLE test_send_allowance;
