-- +goose Up
-- A/B tests. Each recipient's text is rendered for both variants when the audience is stored
-- (body: variant A's, body_b: variant B's, with their prices), so the decision only picks
-- which one the rest is sent. variant is 'A' or 'B' for the two samples and NULL for the
-- rest (and for every recipient of a campaign that is no A/B test); replied marks a sample
-- recipient whose reply (opt-outs excluded) has been counted, so each counts once.
ALTER TABLE recipients
    ADD COLUMN body_b    text,
    ADD COLUMN credits_b integer CHECK (credits_b >= 0),
    ADD COLUMN variant   text CHECK (variant IN ('A', 'B')),
    ADD COLUMN replied   boolean NOT NULL DEFAULT false;
-- The samples are queued before the rest exists for messaging: find them without walking it.
CREATE INDEX recipients_unqueued_samples ON recipients (campaign_id, contact_id)
    WHERE message_id IS NULL AND variant IS NOT NULL;

-- One row per A/B campaign, written in the transaction that draws the samples (so a retried
-- or second run finds them drawn). The counters move with the samples' statuses and replies;
-- winner is written once, when decide_at has passed.
CREATE TABLE ab_tests (
    campaign_id     uuid PRIMARY KEY REFERENCES campaigns (id) ON DELETE CASCADE,
    organization_id uuid NOT NULL,
    a_recipients    integer NOT NULL CHECK (a_recipients >= 0),
    b_recipients    integer NOT NULL CHECK (b_recipients >= 0),
    a_sent          integer NOT NULL DEFAULT 0 CHECK (a_sent >= 0),
    b_sent          integer NOT NULL DEFAULT 0 CHECK (b_sent >= 0),
    a_replies       integer NOT NULL DEFAULT 0 CHECK (a_replies >= 0),
    b_replies       integer NOT NULL DEFAULT 0 CHECK (b_replies >= 0),
    -- Set once, when the samples have been handed to messaging: then + abTestWaitMinutes.
    decide_at       timestamptz,
    winner          text CHECK (winner IN ('A', 'B')),
    decided_at      timestamptz
);

-- +goose Down
DROP TABLE ab_tests;
DROP INDEX recipients_unqueued_samples;
ALTER TABLE recipients DROP COLUMN replied, DROP COLUMN variant, DROP COLUMN credits_b, DROP COLUMN body_b;
