-- +goose Up
-- A recipient's US state as its contact gives it (USPS code; '' none): messaging keeps the
-- message to that state's quiet-hours law, else to its phone's area code's.
ALTER TABLE recipients ADD COLUMN state text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE recipients DROP COLUMN state;
