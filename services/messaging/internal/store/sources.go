package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Source states: a source (campaign, poll) with no row is active. A held source (OpenBulk)
// waits for its billing hold: its bulk batches, and any message of it, wait as a paused
// source's do.
const (
	SourceActive   = "active"
	SourceHeld     = "held"
	SourcePaused   = "paused"
	SourceCanceled = "canceled"
)

// SetSourceState holds, pauses, resumes (active) or cancels a source's queued messages inside
// tx.
// Canceled is final: a later pause or resume of a canceled source changes nothing, and the
// source's bulk batches not yet expanded are dropped with it (their messages are never
// created).
func (s *Store) SetSourceState(ctx context.Context, tx pgx.Tx, org uuid.UUID, kind, id, state string) error {
	if state == SourceActive {
		if _, err := tx.Exec(ctx, `DELETE FROM source_states WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3 AND state <> 'canceled'`, org, kind, id); err != nil {
			return fmt.Errorf("set source state: %w", err)
		}
		return nil
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO source_states (organization_id, source_kind, source_id, state) VALUES ($1, $2, $3, $4)
		ON CONFLICT (organization_id, source_kind, source_id) DO UPDATE SET state = excluded.state, updated_at = now()
		WHERE source_states.state <> 'canceled'`, org, kind, id, state)
	if err != nil {
		return fmt.Errorf("set source state: %w", err)
	}
	if state != SourceCanceled {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM bulk_batches WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3`, org, kind, id); err != nil {
		return fmt.Errorf("drop canceled source's bulk batches: %w", err)
	}
	return nil
}

// WithdrawQueued fails, inside tx and in one statement, every message of the source that is
// still queued, with code (a withdrawal: the carrier never saw them), and returns them as they
// were before. Their send jobs then find them settled and do nothing, so a message held for
// quiet hours leaves the queue now rather than in the morning. A message already claimed
// (sending) is left to its hand-off, which the claim has let go.
func (s *Store) WithdrawQueued(ctx context.Context, tx pgx.Tx, org uuid.UUID, kind, id, code string, at time.Time) ([]Message, error) {
	rows, err := tx.Query(ctx, `WITH moved AS (
			UPDATE messages SET status = 'failed', error_code = $4, status_at = $5, settled_at = NULL
			WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3 AND status = 'queued'
			RETURNING id
		)
		-- The statement's snapshot has the rows as they were before it moved them.
		SELECT `+messageColumns+` FROM messages WHERE id IN (SELECT id FROM moved) ORDER BY id`,
		org, kind, id, code, at)
	if err != nil {
		return nil, fmt.Errorf("withdraw queued messages: %w", err)
	}
	moved, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Message, error) { return scanMessage(r) })
	if err != nil {
		return nil, fmt.Errorf("withdraw queued messages: %w", err)
	}
	return moved, nil
}

// SourceState is the state of the source of m (SourceActive for none).
func (s *Store) SourceState(ctx context.Context, m Message) (string, error) {
	if m.SourceID == "" {
		return SourceActive, nil
	}
	var state string
	err := s.pool.QueryRow(ctx, `SELECT state FROM source_states WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3`,
		m.OrgID, m.SourceKind, m.SourceID).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return SourceActive, nil
	}
	if err != nil {
		return "", fmt.Errorf("source state: %w", err)
	}
	return state, nil
}
