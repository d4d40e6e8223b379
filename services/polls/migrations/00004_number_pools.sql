-- +goose Up
-- A poll's number pool (POST /api/polls/{id}/start fromPhoneNumberIds): NULL when it sends
-- from from_phone_number_id alone, which is otherwise the pool's first number.
ALTER TABLE polls ADD COLUMN from_phone_number_ids uuid[];
-- The pool number messaging picked for the participant when the audience was stored: every
-- step goes from it, so the participant's questions and replies stay in one thread. NULL:
-- the poll's from_phone_number_id.
ALTER TABLE participants ADD COLUMN from_phone_number_id uuid;

-- +goose Down
ALTER TABLE participants DROP COLUMN from_phone_number_id;
ALTER TABLE polls DROP COLUMN from_phone_number_ids;
