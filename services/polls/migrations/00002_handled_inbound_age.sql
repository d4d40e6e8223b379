-- +goose Up
-- The silence sweep deletes handled_inbound rows once their inbound can no longer be replayed
-- from messaging's outbox (store.PruneHandled), oldest first.
CREATE INDEX handled_inbound_age ON handled_inbound (handled_at);

-- +goose Down
DROP INDEX handled_inbound_age;
