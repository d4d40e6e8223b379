package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// claimedAt is when a "sending" message was claimed: Claim stamps status_at, while a reply is
// stored already "sending" with no status_at, so its creation is its claim.
const claimedAt = `coalesce(status_at, created_at)`

// SendingKey is where a page of stuck messages ends; the next page starts after it.
type SendingKey struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// StuckSending returns up to limit outgoing messages claimed before cutoff and still
// "sending", oldest first, after the key when it is set. A claim is never earlier than the
// message's creation, so created_at < cutoff narrows the scan to the messages_unsettled index.
func (s *Store) StuckSending(ctx context.Context, cutoff time.Time, after *SendingKey, limit int) ([]Message, error) {
	q := `SELECT ` + messageColumns + ` FROM messages
		WHERE status = 'sending' AND created_at < $1 AND ` + claimedAt + ` < $1`
	args := []any{cutoff}
	if after != nil {
		q += ` AND (created_at, id) > ($2, $3)`
		args = append(args, after.CreatedAt, after.ID)
	}
	q += fmt.Sprintf(` ORDER BY created_at, id LIMIT %d`, limit)
	return s.messages(ctx, "read stuck sending messages", q, args...)
}

// ExpireSending applies c (as AdvanceStatus does) to message id only if it is still "sending"
// from a claim before cutoff, inside tx. Without this check a message whose carrier answer or
// callback came in meanwhile would be moved on from "sent" too, and one claimed again since
// would be failed while its send is under way.
func (s *Store) ExpireSending(ctx context.Context, tx pgx.Tx, id uuid.UUID, cutoff time.Time, c StatusChange) (before Message, changed bool, err error) {
	var stuck bool
	err = tx.QueryRow(ctx, `SELECT true FROM messages WHERE id = $1 AND status = 'sending' AND `+claimedAt+` < $2 FOR UPDATE`, id, cutoff).Scan(&stuck)
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, false, nil
	}
	if err != nil {
		return Message{}, false, fmt.Errorf("lock stuck sending message: %w", err)
	}
	return s.AdvanceStatus(ctx, tx, id, c)
}

// Unsettled returns up to limit billable messages with a hold that left "sending" before
// cutoff and whose credits were never settled (billing failed when they did), oldest first.
func (s *Store) Unsettled(ctx context.Context, cutoff time.Time, limit int) ([]Message, error) {
	return s.messages(ctx, "read unsettled messages", `SELECT `+messageColumns+` FROM messages
		WHERE settled_at IS NULL AND billable AND hold_id IS NOT NULL AND status NOT IN ('queued', 'sending')
			AND status_at < $1
		ORDER BY status_at LIMIT $2`, cutoff, limit)
}

// MarkSettled records that message id's credits were settled with billing.
func (s *Store) MarkSettled(ctx context.Context, id uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET settled_at = now() WHERE id = $1 AND settled_at IS NULL`, id); err != nil {
		return fmt.Errorf("mark message settled: %w", err)
	}
	return nil
}
