package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ErrNumberTaken is returned when a number already belongs to another organization.
var ErrNumberTaken = errors.New("number belongs to another organization")

// Number is a sending phone number of an organization.
type Number struct {
	ID        uuid.UUID
	OrgID     uuid.UUID
	Number    string
	IsDefault bool
	// MPS is the number's own rate in messages per second; 0 means the service's default.
	MPS       int
	CreatedAt time.Time
}

const numberColumns = `id, organization_id, number, is_default, coalesce(mps, 0), created_at`

func scanNumber(row pgx.Row) (Number, error) {
	var n Number
	err := row.Scan(&n.ID, &n.OrgID, &n.Number, &n.IsDefault, &n.MPS, &n.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Number{}, ErrNotFound
	}
	if err != nil {
		return Number{}, fmt.Errorf("scan number: %w", err)
	}
	return n, nil
}

// AddNumber gives org the number, or finds it when org has it already. It becomes the default
// when makeDefault is set or org has no default yet. A number of another organization is
// ErrNumberTaken.
func (s *Store) AddNumber(ctx context.Context, org uuid.UUID, number string, makeDefault bool) (Number, error) {
	var n Number
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		// Serializes AddNumber per organization so two first numbers cannot both be default.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('messaging.numbers:' || $1::text, 0))`, org); err != nil {
			return fmt.Errorf("lock numbers: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO phone_numbers (id, organization_id, number) VALUES ($1, $2, $3)
			ON CONFLICT (number) DO NOTHING`, uuid.Must(uuid.NewV7()), org, number); err != nil {
			return fmt.Errorf("insert number: %w", err)
		}
		var err error
		n, err = scanNumber(tx.QueryRow(ctx, `SELECT `+numberColumns+` FROM phone_numbers WHERE number = $1`, number))
		if err != nil {
			return err
		}
		if n.OrgID != org {
			return ErrNumberTaken
		}
		var hasDefault bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM phone_numbers WHERE organization_id = $1 AND is_default)`, org).Scan(&hasDefault); err != nil {
			return fmt.Errorf("read default number: %w", err)
		}
		if n.IsDefault || (hasDefault && !makeDefault) {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE phone_numbers SET is_default = false WHERE organization_id = $1 AND is_default`, org); err != nil {
			return fmt.Errorf("clear default number: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE phone_numbers SET is_default = true WHERE id = $1`, n.ID); err != nil {
			return fmt.Errorf("set default number: %w", err)
		}
		n.IsDefault = true
		return nil
	})
	return n, err
}

// SetNumberRate sets the rate (messages per second, > 0) of org's number id; ErrNotFound when
// org has no such number.
func (s *Store) SetNumberRate(ctx context.Context, org, id uuid.UUID, mps int) error {
	if mps <= 0 {
		return fmt.Errorf("set number rate: %d messages per second is not a rate", mps)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE phone_numbers SET mps = $3 WHERE organization_id = $1 AND id = $2`, org, id, mps)
	if err != nil {
		return fmt.Errorf("set number rate: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Number returns org's number id, or ErrNotFound (also for another organization's number).
func (s *Store) Number(ctx context.Context, org, id uuid.UUID) (Number, error) {
	return scanNumber(s.pool.QueryRow(ctx, `SELECT `+numberColumns+` FROM phone_numbers WHERE organization_id = $1 AND id = $2`, org, id))
}

// Numbers returns those of ids that are org's numbers, in no order.
func (s *Store) Numbers(ctx context.Context, org uuid.UUID, ids []uuid.UUID) ([]Number, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+numberColumns+` FROM phone_numbers WHERE organization_id = $1 AND id = ANY($2)`, org, ids)
	if err != nil {
		return nil, fmt.Errorf("read numbers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Number, error) { return scanNumber(row) })
	if err != nil {
		return nil, fmt.Errorf("read numbers: %w", err)
	}
	return out, nil
}

// DefaultNumber returns org's default number, or ErrNotFound.
func (s *Store) DefaultNumber(ctx context.Context, org uuid.UUID) (Number, error) {
	return scanNumber(s.pool.QueryRow(ctx, `SELECT `+numberColumns+` FROM phone_numbers WHERE organization_id = $1 AND is_default`, org))
}

// NumberByE164 finds which organization owns a number (an inbound message's To).
func (s *Store) NumberByE164(ctx context.Context, number string) (Number, error) {
	return scanNumber(s.pool.QueryRow(ctx, `SELECT `+numberColumns+` FROM phone_numbers WHERE number = $1`, number))
}
