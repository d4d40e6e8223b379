-- +goose Up
-- A recipient's own zone (the contact's timezone, else its area code's when that lies in one
-- zone; '' unknown): its message also waits for 08:00-21:00 there.
ALTER TABLE recipients ADD COLUMN timezone text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE recipients DROP COLUMN timezone;
