-- +goose Up
-- How often the reconciler put the message back in the queue: its process died with the
-- message claimed (or the carrier's answer was lost), and the carrier, asked once the carrier
-- call window had passed, did not have it. Each requeue queues a dispatch job of its own (the
-- count is part of its unique key).
ALTER TABLE messages ADD COLUMN requeues integer NOT NULL DEFAULT 0 CHECK (requeues >= 0);

-- The sweep looks for messages stuck in "sending" every few seconds; those are the few in
-- flight, while messages_unsettled also holds every queued one (a million of a large campaign).
CREATE INDEX messages_sending ON messages (created_at, id) WHERE status = 'sending';

-- +goose Down
DROP INDEX messages_sending;
ALTER TABLE messages DROP COLUMN requeues;
