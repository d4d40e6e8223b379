package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// TakeTestSends takes n of org's test copies of the UTC day of now, out of limit, in one
// statement, so concurrent calls cannot exceed it; false (nothing taken) when fewer than n
// are left.
func (s *Store) TakeTestSends(ctx context.Context, org uuid.UUID, now time.Time, n, limit int) (bool, error) {
	var used int
	err := s.pool.QueryRow(ctx, `
		INSERT INTO test_send_allowance AS a (organization_id, day, used)
		SELECT $1, $2::date, $3::integer WHERE $3::integer <= $4::integer
		ON CONFLICT (organization_id, day) DO UPDATE SET used = a.used + EXCLUDED.used
		WHERE a.used + EXCLUDED.used <= $4::integer
		RETURNING used`, org, utcDay(now), n, limit).Scan(&used)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("take test sends: %w", err)
	}
	return true, nil
}

// GiveBackTestSends returns n copies TakeTestSends took for a send that then failed.
func (s *Store) GiveBackTestSends(ctx context.Context, org uuid.UUID, now time.Time, n int) error {
	_, err := s.pool.Exec(ctx, `UPDATE test_send_allowance SET used = greatest(used - $3::integer, 0)
		WHERE organization_id = $1 AND day = $2::date`, org, utcDay(now), n)
	if err != nil {
		return fmt.Errorf("give back test sends: %w", err)
	}
	return nil
}

func utcDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }
