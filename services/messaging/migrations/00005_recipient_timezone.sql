-- +goose Up
-- The recipient's own zone, when the source knew it: a bulk message waits for the quiet-hours
-- window there as well as in quiet_hours_timezone.
ALTER TABLE messages ADD COLUMN recipient_timezone text;

-- +goose Down
ALTER TABLE messages DROP COLUMN recipient_timezone;
