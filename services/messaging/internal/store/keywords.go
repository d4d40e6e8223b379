package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chorus-sms/chorus/pkg/orgtable"
)

// ErrKeywordTaken is returned when the organization already has the keyword.
var ErrKeywordTaken = errors.New("keyword taken")

// Keyword is an organization's sign-up keyword; Word is upper-case letters and digits.
type Keyword struct {
	OrgID        uuid.UUID
	ID           uuid.UUID
	Word         string
	Tag          string
	Confirmation string
	Frequency    string
	CreatedAt    time.Time
}

const keywordColumns = `organization_id, id, keyword, tag, confirmation, frequency, created_at`

func scanKeyword(row pgx.Row) (Keyword, error) {
	var k Keyword
	err := row.Scan(&k.OrgID, &k.ID, &k.Word, &k.Tag, &k.Confirmation, &k.Frequency, &k.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Keyword{}, ErrNotFound
	}
	if err != nil {
		return Keyword{}, fmt.Errorf("read keyword: %w", err)
	}
	return k, nil
}

func (s *Store) keywords() *orgtable.Table[Keyword] {
	return orgtable.New(s.pool, "keywords", keywordColumns, scanKeyword)
}

// InsertKeyword stores k, setting its CreatedAt; a keyword the organization has is
// ErrKeywordTaken.
func (s *Store) InsertKeyword(ctx context.Context, k *Keyword) error {
	err := s.pool.QueryRow(ctx, `INSERT INTO keywords (organization_id, id, keyword, tag, confirmation, frequency)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at`,
		k.OrgID, k.ID, k.Word, k.Tag, k.Confirmation, k.Frequency).Scan(&k.CreatedAt)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "keywords_org_keyword" {
		return ErrKeywordTaken
	}
	if err != nil {
		return fmt.Errorf("insert keyword: %w", err)
	}
	return nil
}

// ListKeywords reads org's keywords, newest first.
func (s *Store) ListKeywords(ctx context.Context, org uuid.UUID) ([]Keyword, error) {
	return s.keywords().List(ctx, org)
}

// KeywordByWord reads org's keyword word (folded as stored), or ErrNotFound: one probe of the
// (organization_id, keyword) key, made for inbound messages short enough to be one.
func (s *Store) KeywordByWord(ctx context.Context, org uuid.UUID, word string) (Keyword, error) {
	return scanKeyword(s.pool.QueryRow(ctx, `SELECT `+keywordColumns+` FROM keywords
		WHERE organization_id = $1 AND keyword = $2`, org, word))
}

// DeleteKeyword removes org's keyword id, or answers ErrNotFound.
func (s *Store) DeleteKeyword(ctx context.Context, org, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM keywords WHERE organization_id = $1 AND id = $2`, org, id)
	if err != nil {
		return fmt.Errorf("delete keyword: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}
