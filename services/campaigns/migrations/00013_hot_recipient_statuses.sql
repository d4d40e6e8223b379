-- +goose Up
-- A recipient's status moves twice (queued to sent, sent to delivered) soon after its row was
-- written by the audience's COPY, which packs pages full: every move then found no room on its
-- page and wrote its new version elsewhere, with a new entry in each index, so the lookups of
-- a campaign's later moves walked more entries as the send went on. status is in no index, so
-- with room left on each page the moves are HOT updates (pages of campaigns created from now on).
ALTER TABLE recipients SET (fillfactor = 60);

-- +goose Down
ALTER TABLE recipients RESET (fillfactor);
