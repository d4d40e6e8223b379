-- +goose Up
-- A campaign's or poll's audience queued as one row per SendMessages batch (bulk): its
-- messages are created, with their dispatch jobs, when the batch is due (quiet hours open
-- for one of them at least) and the dispatch queue is short, so a million-recipient send is
-- queued at the cost of a thousand rows, and a canceled source's batches are dropped without
-- ever becoming messages. What every message of the batch shares is a column; what each has
-- of its own is an array, in order, named after the messages column it fills.
CREATE TABLE bulk_batches (
    id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    organization_id      uuid NOT NULL,
    source_kind          text NOT NULL,
    source_id            text NOT NULL,
    due_at               timestamptz NOT NULL,
    created_at           timestamptz NOT NULL,
    our_number           text NOT NULL,
    phone_number_id      uuid,
    media_urls           text[] NOT NULL,
    is_mms               boolean NOT NULL,
    provider             text NOT NULL,
    billable             boolean NOT NULL,
    hold_id              text,
    quiet_hours_timezone text,
    ids                  uuid[] COMPRESSION lz4 NOT NULL,
    contact_phones       text[] COMPRESSION lz4 NOT NULL,
    bodies               text[] COMPRESSION lz4 NOT NULL,
    credits              integer[] COMPRESSION lz4 NOT NULL,
    dedupe_keys          text[] COMPRESSION lz4 NOT NULL,
    recipient_timezones  text[] COMPRESSION lz4 NOT NULL
);
-- The expander takes the earliest due batch; a cancel drops its source's.
CREATE INDEX bulk_batches_due ON bulk_batches (due_at, id);
CREATE INDEX bulk_batches_source ON bulk_batches (organization_id, source_kind, source_id);

-- +goose Down
DROP TABLE bulk_batches;
