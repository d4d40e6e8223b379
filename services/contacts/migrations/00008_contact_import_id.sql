-- +goose Up
-- The import whose batch inserted the contact set-wise. It stands for the contact's first
-- consent history entry (its initial opt-in, source import), which the history reads beside
-- consent_events (store.ConsentHistory, store.ExportConsent): a consent_events row per
-- imported contact (a heap tuple, three index entries and the foreign key's check per row) was
-- a large part of what an import's merge cost. Nullable without a default, so adding it
-- rewrites nothing. Contacts created any other way, rows an import merged one by one among
-- them, leave it NULL and keep their creation in consent_events.
ALTER TABLE contacts ADD COLUMN import_id uuid;

-- +goose Down
-- The entries the column stands for go back to consent_events, so going down loses no history.
INSERT INTO consent_events (organization_id, contact_id, occurred_at, recorded_at, opted_in, source, import_id)
SELECT organization_id, id, created_at, created_at, true, 'import', import_id FROM contacts WHERE import_id IS NOT NULL;
ALTER TABLE contacts DROP COLUMN import_id;
