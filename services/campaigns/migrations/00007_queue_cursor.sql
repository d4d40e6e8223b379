-- +goose Up
-- The fan-out's progress through messaging's queue: the greatest contact id up to which
-- messaging has stored the recipients' messages, for an A/B test's samples and for the rest
-- (every recipient of a campaign that is no A/B test). It replaces each recipient's
-- message_id, whose write rewrote every recipient row and its index entries a second time;
-- nothing read the id. A campaign queueing when this runs starts its queue again from its
-- first recipient, which messaging answers under the same dedupe keys: nobody gets a second
-- message.
ALTER TABLE campaigns
    ADD COLUMN queued_through         uuid,
    ADD COLUMN samples_queued_through uuid;
DROP INDEX recipients_unqueued;
DROP INDEX recipients_unqueued_samples;
ALTER TABLE recipients DROP COLUMN message_id;
-- The samples are queued before the rest exists for messaging: find them without walking it.
CREATE INDEX recipients_samples ON recipients (campaign_id, contact_id) WHERE variant IS NOT NULL;

-- +goose Down
DROP INDEX recipients_samples;
ALTER TABLE recipients ADD COLUMN message_id uuid;
CREATE INDEX recipients_unqueued ON recipients (campaign_id, contact_id) WHERE message_id IS NULL;
CREATE INDEX recipients_unqueued_samples ON recipients (campaign_id, contact_id)
    WHERE message_id IS NULL AND variant IS NOT NULL;
ALTER TABLE campaigns DROP COLUMN samples_queued_through, DROP COLUMN queued_through;
