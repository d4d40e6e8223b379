-- +goose Up
-- Whether each message of a bulk batch is an MMS: under forceRoute AUTO a long merged text
-- goes as MMS while a short one of the same batch goes as SMS (pkg/route), so the route is a
-- message's own, like its text and price. NULL (a batch stored before this column) means
-- every message takes the batch's is_mms.
ALTER TABLE bulk_batches ADD COLUMN mms boolean[] COMPRESSION lz4;

-- +goose Down
ALTER TABLE bulk_batches DROP COLUMN mms;
