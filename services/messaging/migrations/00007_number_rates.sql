-- +goose Up
-- Each sending number's own rate (messages per second, `chorusctl number add --mps N`); NULL
-- sends at the service's default (CHORUS_NUMBER_RATE). Dispatch paces every number at its rate.
ALTER TABLE phone_numbers ADD COLUMN mps integer CHECK (mps > 0);

-- +goose Down
ALTER TABLE phone_numbers DROP COLUMN mps;
