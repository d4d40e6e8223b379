-- +goose Up
-- The number (E.164) the contact texted: a pool campaign answers from it, so the answer lands
-- in the thread the contact wrote in. NULL for answers recorded before.
ALTER TABLE auto_replies ADD COLUMN our_number text;

-- +goose Down
ALTER TABLE auto_replies DROP COLUMN our_number;
