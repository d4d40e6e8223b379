package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Source states: a source (campaign, poll) with no row is active.
const (
	SourceActive   = "active"
	SourcePaused   = "paused"
	SourceCanceled = "canceled"
)

// SetSourceState pauses, resumes (active) or cancels a source's queued messages. Canceled is
// final: a later pause or resume of a canceled source changes nothing, and the source's bulk
// batches not yet expanded are dropped with it (their messages are never created).
func (s *Store) SetSourceState(ctx context.Context, org uuid.UUID, kind, id, state string) error {
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if state == SourceActive {
			_, err := tx.Exec(ctx, `DELETE FROM source_states WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3 AND state <> 'canceled'`, org, kind, id)
			return err
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO source_states (organization_id, source_kind, source_id, state) VALUES ($1, $2, $3, $4)
			ON CONFLICT (organization_id, source_kind, source_id) DO UPDATE SET state = excluded.state, updated_at = now()
			WHERE source_states.state <> 'canceled'`, org, kind, id, state)
		if err != nil || state != SourceCanceled {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM bulk_batches WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3`, org, kind, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("set source state: %w", err)
	}
	return nil
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
