-- +goose Up
-- When the number's throttle let the message go to the carrier, so the pacing of each sending
-- number can be audited (no second above its rate).
ALTER TABLE messages ADD COLUMN dispatched_at timestamptz;

-- +goose Down
ALTER TABLE messages DROP COLUMN dispatched_at;
