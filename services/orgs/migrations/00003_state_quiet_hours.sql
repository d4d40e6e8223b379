-- +goose Up
-- Whether the organization turned off state quiet-hours laws (pkg/quiethours StateRules):
-- off by default, so every organization keeps to them.
ALTER TABLE organizations ADD COLUMN state_quiet_hours_off boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE organizations DROP COLUMN state_quiet_hours_off;
