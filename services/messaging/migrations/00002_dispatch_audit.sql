-- +goose Up
-- When the number's throttle let the message go to the carrier, so the pacing of each sending
-- number can be audited (no second above its rate).
ALTER TABLE messages ADD COLUMN dispatched_at timestamptz;
-- When the message's credits were settled with billing (posted and/or its own hold released)
-- after it left "sending". A billable message with a hold that has a final status and no
-- settled_at is settled again by the reconciler, so a billing outage loses no credit.
ALTER TABLE messages ADD COLUMN settled_at timestamptz;
CREATE INDEX messages_unsettled_credits ON messages (status_at)
    WHERE settled_at IS NULL AND billable AND hold_id IS NOT NULL AND status NOT IN ('queued', 'sending');

-- +goose Down
DROP INDEX messages_unsettled_credits;
ALTER TABLE messages DROP COLUMN settled_at;
ALTER TABLE messages DROP COLUMN dispatched_at;
