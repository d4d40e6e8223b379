-- +goose Up
-- Campaigns and polls pause or cancel their queued messages here: a paused source's messages
-- wait in the queue, a canceled source's are withdrawn (failed SOURCE_CANCELED, nothing
-- charged). Claim checks it in the statement that hands a message to the carrier.
CREATE TABLE source_states (
    organization_id uuid NOT NULL,
    source_kind     text NOT NULL,
    source_id       text NOT NULL,
    state           text NOT NULL CHECK (state IN ('paused', 'canceled')),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, source_kind, source_id)
);

-- +goose Down
DROP TABLE source_states;
