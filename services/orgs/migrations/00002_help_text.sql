-- +goose Up
-- help_text answers a HELP or INFO text; empty means the default naming the organization.
ALTER TABLE organizations
    ADD COLUMN help_text text NOT NULL DEFAULT '' CHECK (length(help_text) <= 320);

-- +goose Down
ALTER TABLE organizations DROP COLUMN help_text;
