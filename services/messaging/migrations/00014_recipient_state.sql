-- +goose Up
-- The recipient's US state (USPS code) when its quiet-hours law applies: a queued message
-- also keeps to that state's window (pkg/quiethours StateRules). NULL: none known, or the
-- organization turned state rules off. A batch stored before the column (recipient_states
-- NULL) has none.
ALTER TABLE messages ADD COLUMN recipient_state text;
ALTER TABLE bulk_batches ADD COLUMN recipient_states text[] COMPRESSION lz4;

-- +goose Down
ALTER TABLE bulk_batches DROP COLUMN recipient_states;
ALTER TABLE messages DROP COLUMN recipient_state;
