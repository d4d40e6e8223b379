-- +goose Up
-- Fuzzy matching is for names: word similarity computed against the short name text instead
-- of names + email + digits is several times cheaper to recheck and does not fuzzy-match
-- emails. Substring matching (ILIKE) still runs on search_text, so emails and phones are found.
ALTER TABLE contacts ADD COLUMN name_text text NOT NULL
    GENERATED ALWAYS AS (lower(first_name || ' ' || last_name)) STORED;
CREATE INDEX contacts_org_name ON contacts USING gin (organization_id, name_text gin_trgm_ops);

-- +goose Down
DROP INDEX contacts_org_name;
ALTER TABLE contacts DROP COLUMN name_text;
