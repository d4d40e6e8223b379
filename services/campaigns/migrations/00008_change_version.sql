-- +goose Up
-- A campaign's version increases with every change analytics follows (status, name, audience
-- total, completion), whichever statement makes it, so its campaign.changed snapshots can be
-- ordered by whoever consumes them.
ALTER TABLE campaigns ADD COLUMN version bigint NOT NULL DEFAULT 0;

-- +goose StatementBegin
CREATE FUNCTION campaigns_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := OLD.version + 1;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER campaigns_version BEFORE UPDATE ON campaigns FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.name IS DISTINCT FROM NEW.name
        OR OLD.total_count IS DISTINCT FROM NEW.total_count OR OLD.completed_at IS DISTINCT FROM NEW.completed_at)
    EXECUTE FUNCTION campaigns_bump_version();

-- +goose Down
DROP TRIGGER campaigns_version ON campaigns;
DROP FUNCTION campaigns_bump_version();
ALTER TABLE campaigns DROP COLUMN version;
