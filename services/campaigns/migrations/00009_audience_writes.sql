-- +goose Up
-- The fan-out's progress through the audience: the greatest contact id up to which every
-- recipient is stored. The audience's batches are written several at a time, so the greatest
-- contact id stored (what a resumed send started after until now) may lie past a batch that
-- was not; the cursor moves only past batches stored in order. A campaign resolving its
-- audience when this runs starts again from its first contact, and recipients already
-- stored are kept as they are.
ALTER TABLE campaigns ADD COLUMN audience_through uuid;

-- Recipients are written only by their campaign's send, and no campaign is ever deleted:
-- the foreign key's check, one lookup of the campaign per recipient written, was a quarter
-- of the audience's write (a campaign deletion, if one comes, deletes its recipients).
ALTER TABLE recipients DROP CONSTRAINT recipients_campaign_id_fkey;

-- +goose Down
ALTER TABLE recipients ADD CONSTRAINT recipients_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns (id) ON DELETE CASCADE;
ALTER TABLE campaigns DROP COLUMN audience_through;
