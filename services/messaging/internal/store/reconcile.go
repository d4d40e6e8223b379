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
// "sending", oldest first, after the key when it is set: a scan of the messages_sending index,
// which holds only the messages in flight (a claim is never earlier than the message's
// creation, so created_at < cutoff bounds it).
func (s *Store) StuckSending(ctx context.Context, cutoff time.Time, after *SendingKey, limit int) ([]Message, error) {
	q := `SELECT ` + messageColumns + ` FROM messages
		WHERE sending AND created_at < $1 AND ` + claimedAt + ` < $1`
	args := []any{cutoff}
	if after != nil {
		q += ` AND (created_at, id) > ($2, $3)`
		args = append(args, after.CreatedAt, after.ID)
	}
	q += fmt.Sprintf(` ORDER BY created_at, id LIMIT %d`, limit)
	return s.messages(ctx, "read stuck sending messages", q, args...)
}

// AdvanceStuck applies c (as AdvanceStatus does) to message id only if it is still "sending"
// from a claim before cutoff, inside tx. Without this check a message whose carrier answer or
// callback came in meanwhile would be moved on from "sent" too, and one claimed again since
// would be moved while its send is under way.
func (s *Store) AdvanceStuck(ctx context.Context, tx pgx.Tx, id uuid.UUID, cutoff time.Time, c StatusChange) (before Message, changed bool, err error) {
	if stuck, err := lockStuck(ctx, tx, id, cutoff); err != nil || !stuck {
		return Message{}, false, err
	}
	return s.AdvanceStatus(ctx, tx, id, c)
}

// lockStuck locks message id inside tx if it is still "sending" from a claim before cutoff.
func lockStuck(ctx context.Context, tx pgx.Tx, id uuid.UUID, cutoff time.Time) (bool, error) {
	var stuck bool
	err := tx.QueryRow(ctx, `SELECT true FROM messages WHERE id = $1 AND status = 'sending' AND `+claimedAt+` < $2 FOR UPDATE`, id, cutoff).Scan(&stuck)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock stuck sending message: %w", err)
	}
	return true, nil
}

// Requeue puts message id back in the queue inside tx if it is still "sending" from a claim
// before cutoff, and returns how often it was requeued so far, this time included (0 when it
// was not stuck). Only for a message the carrier is known not to have: it is sent again.
func (s *Store) Requeue(ctx context.Context, tx pgx.Tx, id uuid.UUID, cutoff time.Time) (int, error) {
	if stuck, err := lockStuck(ctx, tx, id, cutoff); err != nil || !stuck {
		return 0, err
	}
	var n int
	if err := tx.QueryRow(ctx, `UPDATE messages SET status = 'queued', requeues = requeues + 1 WHERE id = $1 RETURNING requeues`, id).Scan(&n); err != nil {
		return 0, fmt.Errorf("requeue message: %w", err)
	}
	return n, nil
}

// TakenCarrierIDs returns which of the carrier ids sids the carrier's provider already has
// recorded on an outgoing message: those are other messages of ours, not the one looked up.
func (s *Store) TakenCarrierIDs(ctx context.Context, provider string, sids []string) (map[string]bool, error) {
	// One probe of the unique index per id: with provider_message_id = ANY($2), a generic plan
	// may take only the provider as the index's condition and filter every message it sent.
	rows, err := s.pool.Query(ctx, `SELECT sid FROM unnest($2::text[]) AS t(sid)
		CROSS JOIN LATERAL (SELECT FROM messages WHERE direction = 'outgoing' AND provider = $1
			AND provider_message_id = t.sid LIMIT 1) AS taken`, provider, sids)
	if err != nil {
		return nil, fmt.Errorf("read recorded carrier ids: %w", err)
	}
	taken, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read recorded carrier ids: %w", err)
	}
	out := make(map[string]bool, len(taken))
	for _, sid := range taken {
		out[sid] = true
	}
	return out, nil
}

// BodiesOfOthers returns which of bodies are the text of another outgoing message of ours
// than m, from m's number to m's contact, handed to the carrier between since and until (a
// reply whose hand-off was lost has no dispatch time stored: its claim, status_at, or its
// creation stands in, as in resolveOne):
// a carrier's message with such a text is that other message, not m.
func (s *Store) BodiesOfOthers(ctx context.Context, m Message, since, until time.Time, bodies []string) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT body FROM messages
		WHERE organization_id = $1 AND contact_phone = $2 AND coalesce(dispatched_at, status_at, created_at) BETWEEN $3 AND $4
			AND direction = 'outgoing' AND our_number = $5 AND id <> $6 AND body = ANY($7)`,
		m.OrgID, m.ContactPhone, since, until, m.OurNumber, m.ID, bodies)
	if err != nil {
		return nil, fmt.Errorf("read other messages' texts: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read other messages' texts: %w", err)
	}
	out := make(map[string]bool, len(found))
	for _, b := range found {
		out[b] = true
	}
	return out, nil
}

// Unsettled returns up to limit billable messages with a hold that left "sending" before
// cutoff and whose credits were never settled (billing failed when they did), oldest first:
// a scan of the messages_unsettled_credits index, which holds only those messages.
func (s *Store) Unsettled(ctx context.Context, cutoff time.Time, limit int) ([]Message, error) {
	return s.messages(ctx, "read unsettled messages", `SELECT `+messageColumns+` FROM messages
		WHERE owes_settlement AND status_at < $1
		ORDER BY created_at, id LIMIT $2`, cutoff, limit)
}

// MarkSettled records that message id's credits were settled with billing.
func (s *Store) MarkSettled(ctx context.Context, id uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET settled_at = now() WHERE id = $1 AND settled_at IS NULL`, id); err != nil {
		return fmt.Errorf("mark message settled: %w", err)
	}
	return nil
}
