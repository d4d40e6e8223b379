package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrCodeTaken is returned when a short-link code is already in use (retry with another).
var ErrCodeTaken = errors.New("short link code taken")

// InsertLink stores a short link of message, inside tx.
func (s *Store) InsertLink(ctx context.Context, tx pgx.Tx, org, message uuid.UUID, code, url string) error {
	_, err := tx.Exec(ctx, `INSERT INTO short_links (code, organization_id, message_id, url) VALUES ($1, $2, $3, $4)`, code, org, message, url)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return ErrCodeTaken
	}
	if err != nil {
		return fmt.Errorf("insert short link: %w", err)
	}
	return nil
}

// FollowLink counts a click of code and returns its URL, or ErrNotFound.
func (s *Store) FollowLink(ctx context.Context, code, userAgent string) (string, error) {
	var url string
	err := s.pool.QueryRow(ctx, `WITH link AS (
			UPDATE short_links SET clicks = clicks + 1 WHERE code = $1 RETURNING code, organization_id, url
		), click AS (
			INSERT INTO link_clicks (code, organization_id, user_agent) SELECT code, organization_id, $2 FROM link
		)
		SELECT url FROM link`, code, userAgent).Scan(&url)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("follow short link: %w", err)
	}
	return url, nil
}
