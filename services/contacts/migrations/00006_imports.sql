-- +goose Up
-- A bulk import of a CSV file (POST /api/contacts/imports). The file is staged in import_rows
-- as it is uploaded; a River job merges the rows in batches of line numbers, recording in
-- merged_through how far it got in the transaction of each batch, so a retried job resumes.
CREATE TABLE contact_imports (
    id              uuid NOT NULL,
    organization_id uuid NOT NULL,
    status          text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    header          text[] NOT NULL,
    total           integer NOT NULL DEFAULT 0,
    processed       integer NOT NULL DEFAULT 0,
    created         integer NOT NULL DEFAULT 0,
    merged          integer NOT NULL DEFAULT 0,
    rejected        integer NOT NULL DEFAULT 0,
    merged_through  integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz,
    PRIMARY KEY (organization_id, id)
);

-- One row per data line of a file: the validated fields (NULL where the cell was empty, which
-- counts as not sent), the contact id the row creates if nothing matches, the cells as sent,
-- and the reason once rejected. Merged rows are deleted with their batch; rejected ones stay
-- for GET .../rejected. Unlogged: a file is written here once and read once, and logging it
-- would double an import's writes; a crash empties the table, and the import then fails (see
-- MergeImportBatch), to be imported again.
CREATE UNLOGGED TABLE import_rows (
    organization_id uuid NOT NULL,
    import_id       uuid NOT NULL,
    line            integer NOT NULL,
    contact_id      uuid NOT NULL,
    phone           text,
    email           text,
    first_name      text,
    last_name       text,
    address         text,
    city            text,
    state           text,
    zip             text,
    timezone        text,
    tags            text[],
    custom_fields   jsonb,
    cells           text[] NOT NULL,
    reason          text,
    PRIMARY KEY (organization_id, import_id, line)
);

-- The phone lookups an import's batch queued, worked by one job per batch (lookup.BatchArgs) at
-- the provider's pace; a row is deleted once its lookup is done, so what is left is pending.
-- A River job per contact would cost more to insert than the contact itself.
CREATE TABLE import_lookups (
    organization_id uuid NOT NULL,
    import_id       uuid NOT NULL,
    batch           integer NOT NULL,
    contact_id      uuid NOT NULL,
    phone           text NOT NULL,
    phone_set_at    timestamptz NOT NULL,
    PRIMARY KEY (organization_id, import_id, batch, contact_id)
);

-- +goose Down
DROP TABLE import_lookups;
DROP TABLE import_rows;
DROP TABLE contact_imports;
