-- +goose Up
-- A campaign's number pool (POST /api/campaigns fromPhoneNumberIds): NULL when it sends from
-- from_phone_number_id alone, which is otherwise the pool's first number. Messaging picks
-- each recipient's number from the pool.
ALTER TABLE campaigns ADD COLUMN from_phone_number_ids uuid[];

-- +goose Down
ALTER TABLE campaigns DROP COLUMN from_phone_number_ids;
