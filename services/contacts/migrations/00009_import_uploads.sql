-- +goose Up
-- How far the upload of an import has been staged. A file sent with a declared length is
-- staged in chunks, each its own transaction, and its merge job merges what is staged while
-- the rest is still arriving. The merge holds the import's contact_imports row FOR UPDATE for
-- a whole batch, so the staging side keeps its progress here instead: it would otherwise wait
-- behind every batch, and the upload and the merge would run one after the other again.
-- Written only by staging, read without lock by the merge and by GET (which adds these counts
-- to the row's); the import's end folds them into contact_imports and deletes the row. An
-- import without a row here is wholly staged, its counts all in contact_imports.
CREATE TABLE import_uploads (
    organization_id  uuid NOT NULL,
    import_id        uuid NOT NULL,
    -- Lines staged (committed in import_rows), 1..staged_through.
    staged_through   integer NOT NULL,
    -- Of those, lines rejected as read (not valid CSV, a field the create would reject).
    rejected_as_read integer NOT NULL,
    -- The file has ended: staged_through is its last line.
    complete         boolean NOT NULL,
    -- When staging last made progress; the merge fails an import whose staging stalled.
    staged_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, import_id)
);

-- +goose Down
-- Uploads still being staged end as their staging would, were it gone: folded into their
-- imports, which fail unless the file was complete.
UPDATE contact_imports i SET total = i.total + u.staged_through, processed = i.processed + u.rejected_as_read,
    rejected = i.rejected + u.rejected_as_read,
    status = CASE WHEN u.complete THEN i.status ELSE 'failed' END,
    completed_at = CASE WHEN u.complete THEN i.completed_at ELSE coalesce(i.completed_at, now()) END
FROM import_uploads u WHERE u.organization_id = i.organization_id AND u.import_id = i.id;
DROP TABLE import_uploads;
