-- +goose Up
-- How many lookups of each batch of an import are still pending. GET of an import shows their
-- sum, a row per batch, where it used to count import_lookups: a large import's lookups are
-- worked at the provider's pace, for hours, while its status is polled, and each poll counted
-- up to every one of them. The merge of a batch writes the batch's row with the lookups it
-- queued, in its transaction; the batch's lookup job, the only one that deletes its rows,
-- takes off what it deletes in the same statement.
CREATE TABLE import_lookup_batches (
    organization_id uuid NOT NULL,
    import_id       uuid NOT NULL,
    batch           integer NOT NULL,
    pending         integer NOT NULL,
    PRIMARY KEY (organization_id, import_id, batch)
);

INSERT INTO import_lookup_batches (organization_id, import_id, batch, pending)
SELECT organization_id, import_id, batch, count(*) FROM import_lookups GROUP BY organization_id, import_id, batch;

-- +goose Down
DROP TABLE import_lookup_batches;
