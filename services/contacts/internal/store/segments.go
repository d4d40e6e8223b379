package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Segment is a saved contact filter, evaluated when used.
type Segment struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	Name           string
	Filter         Filter
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

const segmentColumns = `id, organization_id, name, filter, created_at, updated_at`

func scanSegment(row pgx.CollectableRow) (Segment, error) {
	var s Segment
	err := row.Scan(&s.ID, &s.OrganizationID, &s.Name, &s.Filter, &s.CreatedAt, &s.UpdatedAt)
	return s, err
}

// oneSegment reads the single row of rows, mapping no row to ErrNotFound and a duplicate name
// to a *DuplicateError.
func oneSegment(rows pgx.Rows, what string) (Segment, error) {
	seg, err := pgx.CollectExactlyOneRow(rows, scanSegment)
	if errors.Is(err, pgx.ErrNoRows) {
		return Segment{}, ErrNotFound
	}
	if field, dup := uniqueViolation(err); dup {
		return Segment{}, &DuplicateError{Field: field}
	}
	if err != nil {
		return Segment{}, fmt.Errorf("%s segment: %w", what, err)
	}
	return seg, nil
}

// MaxSegments bounds an organization's segments, so listing them stays one bounded answer.
const MaxSegments = 500

// ErrSegmentLimit is returned when the organization already has MaxSegments segments.
var ErrSegmentLimit = errors.New("segment limit reached")

// CreateSegment saves a filter under a name unique (case-insensitive) in the organization, up
// to MaxSegments (a soft bound: concurrent creates may pass it by a few).
func (s *Store) CreateSegment(ctx context.Context, org uuid.UUID, name string, f Filter) (Segment, error) {
	id, err := newID()
	if err != nil {
		return Segment{}, err
	}
	rows, _ := s.pool.Query(ctx, `
		INSERT INTO segments (id, organization_id, name, filter)
		SELECT $1, $2, $3, $4 WHERE (SELECT count(*) FROM segments WHERE organization_id = $2) < $5
		RETURNING `+segmentColumns, id, org, name, f, MaxSegments)
	seg, err := oneSegment(rows, "insert")
	if errors.Is(err, ErrNotFound) {
		return Segment{}, ErrSegmentLimit
	}
	return seg, err
}

// GetSegment returns one segment or ErrNotFound.
func (s *Store) GetSegment(ctx context.Context, org, id uuid.UUID) (Segment, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+segmentColumns+` FROM segments WHERE organization_id = $1 AND id = $2`, org, id)
	return oneSegment(rows, "select")
}

// ListSegments returns the organization's segments, newest first.
func (s *Store) ListSegments(ctx context.Context, org uuid.UUID) ([]Segment, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT `+segmentColumns+` FROM segments WHERE organization_id = $1
		ORDER BY created_at DESC, id DESC`, org)
	segs, err := pgx.CollectRows(rows, scanSegment)
	if err != nil {
		return nil, fmt.Errorf("list segments: %w", err)
	}
	return segs, nil
}

// UpdateSegment renames a segment and/or replaces its filter; nil arguments keep the value.
func (s *Store) UpdateSegment(ctx context.Context, org, id uuid.UUID, name *string, f *Filter) (Segment, error) {
	rows, _ := s.pool.Query(ctx, `
		UPDATE segments SET name = coalesce($3, name), filter = coalesce($4, filter), updated_at = now()
		WHERE organization_id = $1 AND id = $2
		RETURNING `+segmentColumns, org, id, name, f)
	return oneSegment(rows, "update")
}

// DeleteSegment removes a segment or returns ErrNotFound.
func (s *Store) DeleteSegment(ctx context.Context, org, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM segments WHERE organization_id = $1 AND id = $2`, org, id)
	if err != nil {
		return fmt.Errorf("delete segment: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}
