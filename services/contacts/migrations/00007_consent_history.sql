-- +goose Up
-- uuidv7 makes a UUIDv7 (48 bits of Unix milliseconds, then random bits) for rows inserted
-- set-wise in SQL, where Go cannot hand out ids (an import's batch). PostgreSQL 18 has it
-- built in; until then this one.
-- +goose StatementBegin
CREATE FUNCTION uuidv7() RETURNS uuid AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$ LANGUAGE sql VOLATILE;
-- +goose StatementEnd

-- Every change of a contact's opt-in (is_opted_in), recorded once in the transaction that
-- makes it, with what caused it: the contact's creation (its initial opt-in) included. A
-- deleted contact's history goes with it (the spec's delete rule).
CREATE TABLE consent_events (
    id              uuid NOT NULL DEFAULT uuidv7(),
    organization_id uuid NOT NULL,
    contact_id      uuid NOT NULL,
    -- When it happened, as the caller reported it (e.g. the STOP's receipt).
    occurred_at     timestamptz NOT NULL,
    -- When it was applied: the clock after the contact's row lock, so a contact's changes are
    -- in the order they were applied.
    recorded_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    opted_in        boolean NOT NULL,
    source          text NOT NULL CHECK (source IN ('api', 'import', 'keyword', 'text', 'carrier', 'signup')),
    -- The keyword (STOP), the rule (stop-messaging), the carrier's code (21610), a note.
    detail          text NOT NULL DEFAULT '',
    message_id      text,
    message_text    text,
    user_subject    text,
    import_id       uuid,
    PRIMARY KEY (organization_id, id),
    FOREIGN KEY (organization_id, contact_id) REFERENCES contacts (organization_id, id) ON DELETE CASCADE
);

-- A contact's history in the order it was applied (also what a contact's delete cascades
-- through), and the organization's by when it happened (the export's range).
CREATE INDEX consent_events_org_contact ON consent_events (organization_id, contact_id, recorded_at, id);
CREATE INDEX consent_events_org_occurred ON consent_events (organization_id, occurred_at, id);

-- +goose Down
DROP TABLE consent_events;
DROP FUNCTION uuidv7();
