package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// Counts are an organization's contact totals as analytics' overview reports them.
type Counts struct {
	Total, Textable, OptedOut int32
}

// Totals returns org's totals in one pass over its contacts (the (organization_id, created_at)
// index bounds it to the organization's rows).
func (s *Store) Totals(ctx context.Context, org uuid.UUID) (Counts, error) {
	var c Counts
	err := s.pool.QueryRow(ctx, `SELECT count(*)::int, (count(*) FILTER (WHERE is_textable))::int,
			(count(*) FILTER (WHERE NOT is_opted_in))::int
		FROM contacts WHERE organization_id = $1`, org).Scan(&c.Total, &c.Textable, &c.OptedOut)
	if err != nil {
		return Counts{}, fmt.Errorf("count contacts: %w", err)
	}
	return c, nil
}
