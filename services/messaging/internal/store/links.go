package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrCodeTaken is returned when a short-link code is already in use (retry with another).
var ErrCodeTaken = errors.New("short link code taken")

// isCodeTaken reports whether err is a unique violation of the code (the primary key), as
// opposed to the (source, URL) index that ON CONFLICT handles.
func isCodeTaken(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "short_links_pkey"
}

// InsertLink stores a short link of message, inside tx.
func (s *Store) InsertLink(ctx context.Context, tx pgx.Tx, org, message uuid.UUID, code, url string) error {
	_, err := tx.Exec(ctx, `INSERT INTO short_links (code, organization_id, message_id, url) VALUES ($1, $2, $3, $4)`, code, org, message, url)
	if isCodeTaken(err) {
		return ErrCodeTaken
	}
	if err != nil {
		return fmt.Errorf("insert short link: %w", err)
	}
	return nil
}

// Source names what a source's short links belong to: kind ("campaign", "poll", "test") and id.
type Source struct {
	Kind, ID string
}

// SourceLinks returns the code of each of urls for org's source, creating the missing ones
// with codes from newCode: one code per (org, source, URL) however often or concurrently it is
// asked. ErrCodeTaken means a new code collided with an existing one (retry).
func (s *Store) SourceLinks(ctx context.Context, org uuid.UUID, src Source, urls []string, newCode func() (string, error)) (map[string]string, error) {
	distinct := slices.Clone(urls)
	// One order for every caller, so two fan-outs inserting the same URLs never wait on each
	// other in a cycle.
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	codes := make([]string, len(distinct))
	for i := range codes {
		c, err := newCode()
		if err != nil {
			return nil, err
		}
		codes[i] = c
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO short_links (code, organization_id, source_kind, source_id, url)
		SELECT code, $1, $2, $3, url FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS l (code, url, n) ORDER BY n
		ON CONFLICT (organization_id, source_kind, source_id, md5(url)) WHERE message_id IS NULL DO NOTHING`,
		org, src.Kind, src.ID, codes, distinct)
	if isCodeTaken(err) {
		return nil, ErrCodeTaken
	}
	if err != nil {
		return nil, fmt.Errorf("insert source links: %w", err)
	}
	// A separate statement, so that links a concurrent caller committed while this insert
	// waited for it are seen.
	rows, err := s.pool.Query(ctx, `
		SELECT url, code FROM short_links
		WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3 AND message_id IS NULL
			AND md5(url) IN (SELECT md5(u) FROM unnest($4::text[]) AS u)`,
		org, src.Kind, src.ID, distinct)
	if err != nil {
		return nil, fmt.Errorf("read source links: %w", err)
	}
	out := make(map[string]string, len(distinct))
	var url, code string
	_, err = pgx.ForEachRow(rows, []any{&url, &code}, func() error {
		out[url] = code
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read source links: %w", err)
	}
	for _, u := range distinct {
		if _, ok := out[u]; !ok {
			return nil, fmt.Errorf("source link of %q not stored", u)
		}
	}
	return out, nil
}

// Link is a followed short link: its organization, target and what it belongs to (a reply's
// message, or a source).
type Link struct {
	OrgID     uuid.UUID
	URL       string
	MessageID *uuid.UUID
	Source    Source
}

// FollowLink records a click of code inside tx and returns the link, or ErrNotFound. publish
// runs in between (the click's event): the link's click counter, the one row every click of a
// popular link writes, is updated last, so its lock is held only until tx commits.
func (s *Store) FollowLink(ctx context.Context, tx pgx.Tx, code, userAgent string, publish func(Link) error) (Link, error) {
	var l Link
	err := tx.QueryRow(ctx, `WITH link AS (
			SELECT code, organization_id, url, message_id, source_kind, source_id FROM short_links WHERE code = $1
		), click AS (
			INSERT INTO link_clicks (code, organization_id, user_agent) SELECT code, organization_id, $2 FROM link
		)
		SELECT organization_id, url, message_id, source_kind, source_id FROM link`, code, userAgent).
		Scan(&l.OrgID, &l.URL, &l.MessageID, &l.Source.Kind, &l.Source.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Link{}, ErrNotFound
	}
	if err != nil {
		return Link{}, fmt.Errorf("follow short link: %w", err)
	}
	if err := publish(l); err != nil {
		return Link{}, err
	}
	if _, err := tx.Exec(ctx, `UPDATE short_links SET clicks = clicks + 1 WHERE code = $1`, code); err != nil {
		return Link{}, fmt.Errorf("count short link click: %w", err)
	}
	return l, nil
}
