-- +goose Up
-- A message's place in its thread, kept apart from created_at (when the row was made, which
-- analytics reads): a queued message takes its place when it is sent, a keyword's answer
-- right after the message it answers.
ALTER TABLE messages ADD COLUMN thread_at timestamptz;
UPDATE messages SET thread_at = created_at;
ALTER TABLE messages ALTER COLUMN thread_at SET NOT NULL;
DROP INDEX messages_thread;
CREATE INDEX messages_thread ON messages (organization_id, contact_phone, thread_at DESC, id DESC);

-- An inbound message is stored once per receiving organization and carrier id: the carrier's
-- id is chosen by whoever signs the webhook, so one organization's traffic must not be able
-- to shadow another's. A status callback still finds an outgoing message by the carrier's id,
-- which the carrier assigned.
DROP INDEX messages_provider_id;
CREATE UNIQUE INDEX messages_incoming_provider_id ON messages (organization_id, provider, provider_message_id)
    WHERE direction = 'incoming' AND provider_message_id IS NOT NULL;
CREATE UNIQUE INDEX messages_outgoing_provider_id ON messages (provider, provider_message_id)
    WHERE direction = 'outgoing' AND provider_message_id IS NOT NULL;

-- +goose Down
DROP INDEX messages_outgoing_provider_id;
DROP INDEX messages_incoming_provider_id;
CREATE UNIQUE INDEX messages_provider_id ON messages (provider, provider_message_id) WHERE provider_message_id IS NOT NULL;
DROP INDEX messages_thread;
CREATE INDEX messages_thread ON messages (organization_id, contact_phone, created_at DESC, id DESC);
ALTER TABLE messages DROP COLUMN thread_at;
