-- +goose Up
-- A message's fact is rewritten as its reports arrive (sent, then delivered), and no index
-- covers what changes: with room left on each page the new version stays on the page (a HOT
-- update), without a new primary-key entry.
ALTER TABLE messages SET (fillfactor = 70);

-- +goose Down
ALTER TABLE messages RESET (fillfactor);
