-- +goose Up
-- A delivery report moves a sent message's status and status_at and nothing else. While an
-- index named either column (as a key or in its predicate), every report wrote a new entry
-- into each of the table's indexes and its row version to another page. The two partial
-- indexes now name columns generated from them, which a report from sent to delivered leaves
-- as they were, and each page keeps room for its rows' next versions: the report is a HOT
-- update (the new version beside the old one, no index entry). Adding the columns rewrites
-- the table once.
ALTER TABLE messages
    SET (fillfactor = 70),
    ADD COLUMN sending boolean GENERATED ALWAYS AS (status = 'sending') STORED,
    ADD COLUMN owes_settlement boolean GENERATED ALWAYS AS (
        settled_at IS NULL AND billable AND hold_id IS NOT NULL AND status NOT IN ('queued', 'sending')) STORED;

DROP INDEX messages_sending;
CREATE INDEX messages_sending ON messages (created_at, id) WHERE sending;
DROP INDEX messages_unsettled_credits;
CREATE INDEX messages_unsettled_credits ON messages (created_at, id) WHERE owes_settlement;

-- +goose Down
DROP INDEX messages_unsettled_credits;
CREATE INDEX messages_unsettled_credits ON messages (status_at)
    WHERE settled_at IS NULL AND billable AND hold_id IS NOT NULL AND status NOT IN ('queued', 'sending');
DROP INDEX messages_sending;
CREATE INDEX messages_sending ON messages (created_at, id) WHERE status = 'sending';
ALTER TABLE messages DROP COLUMN owes_settlement, DROP COLUMN sending, RESET (fillfactor);
