-- +goose Up
-- The organization's frequency cap asks, for each campaign message about to be handed to the
-- carrier, whether its recipient was handed another campaign message since a moment: one
-- probe of this index per message, by (organization, phone), whatever the planner's
-- statistics say of the log (a partial index only campaign messages enter, once claimed).
CREATE INDEX messages_campaign_dispatched ON messages (organization_id, contact_phone, dispatched_at)
    WHERE source_kind = 'campaign' AND dispatched_at IS NOT NULL;

-- +goose Down
DROP INDEX messages_campaign_dispatched;
