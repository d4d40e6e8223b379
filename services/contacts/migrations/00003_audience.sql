-- +goose Up
-- Audience streams walk an organization's sendable contacts by id (StreamAudience's keyset).
CREATE INDEX contacts_org_sendable_id ON contacts (organization_id, id)
    WHERE phone IS NOT NULL AND is_opted_in AND is_textable;

-- +goose Down
DROP INDEX contacts_org_sendable_id;
