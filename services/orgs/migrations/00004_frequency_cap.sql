-- +goose Up
-- The organization's frequency cap: a campaign message is not sent to a recipient who was
-- sent one within the last this many hours (messaging skips it at dispatch); 0 is off, the
-- default.
ALTER TABLE organizations ADD COLUMN frequency_cap_hours integer NOT NULL DEFAULT 0
    CHECK (frequency_cap_hours BETWEEN 0 AND 720);

-- +goose Down
ALTER TABLE organizations DROP COLUMN frequency_cap_hours;
