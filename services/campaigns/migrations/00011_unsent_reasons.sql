-- +goose Up
-- Why a recipient got no message when the audience was stored (EMPTY_TEXT, TEXT_TOO_LONG),
-- and the campaign's count of each, summed once with failed_count when the audience is
-- resolved (the campaign detail's displayMetrics.unsent).
ALTER TABLE recipients ADD COLUMN unsent_reason text;
ALTER TABLE campaigns ADD COLUMN unsent jsonb NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE campaigns DROP COLUMN unsent;
ALTER TABLE recipients DROP COLUMN unsent_reason;
