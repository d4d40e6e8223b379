-- +goose Up
-- asked_step is the last step whose message reached the carrier (messaging's status event
-- "sent" or "delivered" of its dedupe key), as sent_step is the last handed to messaging: a
-- reply answers the participant's question only once asked_step = step. A question handed to
-- messaging but held there (quiet hours, a pause, the throttle) is not asked yet.
ALTER TABLE participants ADD COLUMN asked_step integer NOT NULL DEFAULT 0;
-- Participants asked before this column existed were answerable once their step was handed
-- over: they keep that, rather than waiting for a status event that already went by.
UPDATE participants SET asked_step = sent_step WHERE sent_step > 0;

-- +goose Down
ALTER TABLE participants DROP COLUMN asked_step;
