-- +goose Up
-- Which rows wait to be published is kept apart from the rows. Marking a row published
-- rewrote it whole (its payload too) with new entries in each index, since published_at was in
-- the partial index's predicate, and the relay's search walked that index's entries of every
-- row published since the last vacuum. A row now waits as its id in outbox_pending, written by
-- the trigger below in the statement that writes the row (so rows written by code from before
-- this migration wait too), and the relay deletes the id when it has published the row: the
-- outbox itself is only ever inserted into and pruned.
CREATE TABLE outbox_pending (id bigint PRIMARY KEY);
INSERT INTO outbox_pending SELECT id FROM outbox WHERE published_at IS NULL;

-- +goose StatementBegin
CREATE FUNCTION outbox_pend() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO outbox_pending (id) SELECT id FROM written;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER outbox_pend AFTER INSERT ON outbox REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_pend();

DROP INDEX IF EXISTS outbox_unpublished;
ALTER TABLE outbox DROP COLUMN published_at;

-- +goose Down
ALTER TABLE outbox ADD COLUMN published_at timestamptz;
UPDATE outbox SET published_at = now() WHERE id NOT IN (SELECT id FROM outbox_pending);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
DROP TRIGGER outbox_pend ON outbox;
DROP FUNCTION outbox_pend();
DROP TABLE outbox_pending;
