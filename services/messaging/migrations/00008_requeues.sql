-- +goose Up
-- How often the reconciler put the message back in the queue: its process died with the
-- message claimed, and the carrier, asked once the carrier call window had passed, did not
-- have it. Each requeue queues a dispatch job of its own (the count is part of its unique key).
ALTER TABLE messages ADD COLUMN requeues integer NOT NULL DEFAULT 0 CHECK (requeues >= 0);

-- +goose Down
ALTER TABLE messages DROP COLUMN requeues;
