-- +goose Up
-- Short links of a source (a campaign, a poll, a campaign's test copies) rather than of one
-- message: one code per (organization, source, URL), shared by every message of the source
-- that carries the URL, so a retried fan-out finds the code it made before. A reply's links
-- keep their message (source_kind 'reply'). The URL is indexed by its md5 since a URL may be
-- longer than a btree entry can hold.
ALTER TABLE short_links
    ALTER COLUMN message_id DROP NOT NULL,
    ADD COLUMN source_kind text NOT NULL DEFAULT 'reply',
    ADD COLUMN source_id text NOT NULL DEFAULT '',
    ADD CONSTRAINT short_links_owner CHECK ((message_id IS NULL) = (source_id <> ''));
CREATE UNIQUE INDEX short_links_source_url ON short_links (organization_id, source_kind, source_id, md5(url))
    WHERE message_id IS NULL;

-- +goose Down
DROP INDEX short_links_source_url;
DELETE FROM short_links WHERE message_id IS NULL;
ALTER TABLE short_links
    DROP CONSTRAINT short_links_owner,
    DROP COLUMN source_id,
    DROP COLUMN source_kind,
    ALTER COLUMN message_id SET NOT NULL;
