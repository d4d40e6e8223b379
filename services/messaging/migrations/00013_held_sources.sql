-- +goose Up
-- A campaign or poll opening a bulk hand-off (OpenBulk) is held: its bulk batches wait for
-- its billing hold (ReleaseBulk), a state of its own rather than a pause.
ALTER TABLE source_states DROP CONSTRAINT source_states_state_check,
    ADD CONSTRAINT source_states_state_check CHECK (state IN ('held', 'paused', 'canceled'));

-- +goose Down
UPDATE source_states SET state = 'paused' WHERE state = 'held';
ALTER TABLE source_states DROP CONSTRAINT source_states_state_check,
    ADD CONSTRAINT source_states_state_check CHECK (state IN ('paused', 'canceled'));
