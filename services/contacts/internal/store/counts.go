package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Counts are an organization's contact totals as analytics' overview reports them.
type Counts struct {
	Total, Textable, OptedOut int32
}

// Totals returns org's totals, kept by triggers in the transaction of every write to contacts
// (migrations 00004, 00005), so reading them costs a few rows however many contacts the
// organization has. contact_totals is a view summing the organization's stripes: each write
// adds to its backend's stripe, so concurrent writes of one organization do not wait for each
// other's commit.
func (s *Store) Totals(ctx context.Context, org uuid.UUID) (Counts, error) {
	var c Counts
	err := s.pool.QueryRow(ctx, `SELECT total, textable, opted_out FROM contact_totals WHERE organization_id = $1`, org).
		Scan(&c.Total, &c.Textable, &c.OptedOut)
	if errors.Is(err, pgx.ErrNoRows) {
		return Counts{}, nil // no contact ever
	}
	if err != nil {
		return Counts{}, fmt.Errorf("read contact totals: %w", err)
	}
	return c, nil
}
