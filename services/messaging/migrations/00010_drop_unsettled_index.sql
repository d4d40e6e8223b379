-- +goose Up
-- No statement reads messages_unsettled since the reconciler's sweep reads messages_sending
-- (00008), and every queued message and every claim wrote an entry into it.
DROP INDEX messages_unsettled;

-- +goose Down
CREATE INDEX messages_unsettled ON messages (created_at) WHERE status IN ('queued', 'sending');
