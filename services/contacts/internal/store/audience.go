package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// AudienceBatch returns up to limit of org's contacts matching f that may be texted (a phone,
// opted in, confirmed textable), with their custom fields, ordered by id after the id after
// (uuid.Nil starts at the first). Walking by id visits each contact once however the list
// changes meanwhile.
func (s *Store) AudienceBatch(ctx context.Context, org uuid.UUID, f Filter, after uuid.UUID, limit int) ([]Contact, error) {
	q := newQuery(org, f)
	q.where("phone IS NOT NULL AND is_opted_in AND is_textable")
	q.where("id > " + q.arg(after))
	rows, _ := s.pool.Query(ctx, `SELECT `+fullColumns+` FROM contacts WHERE `+q.sql()+` ORDER BY id LIMIT `+q.arg(limit), q.args...)
	out, err := pgx.CollectRows(rows, scanFull)
	if err != nil {
		return nil, fmt.Errorf("audience batch: %w", err)
	}
	return out, nil
}
