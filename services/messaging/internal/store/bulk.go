package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/outbox"
)

// InsertBulk stores a bulk batch: msgs, all queued and of one source, as one row whose
// messages ExpandBulk creates once due (the earliest time one of them may go).
func (s *Store) InsertBulk(ctx context.Context, msgs []*Message, due time.Time) error {
	if len(msgs) == 0 {
		return nil
	}
	var cols outgoingColumns
	for _, m := range msgs {
		if err := cols.add(m); err != nil {
			return err
		}
	}
	first := msgs[0]
	args := append([]any{first.OrgID, first.SourceKind, first.SourceID, due}, cols.args()...)
	_, err := s.pool.Exec(ctx, `INSERT INTO bulk_batches (organization_id, source_kind, source_id, due_at, `+bulkColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`, args...)
	if err != nil {
		return fmt.Errorf("store bulk batch: %w", err)
	}
	return nil
}

// bulkColumns are bulk_batches' arrays in outgoingColumns.args' order.
const bulkColumns = `ids, organization_ids, contact_phones, our_numbers, phone_number_ids, bodies, media, is_mms, statuses,
	providers, credits, billable, hold_ids, source_kinds, source_ids, dedupe_keys, quiet_hours_timezones, created_ats,
	recipient_timezones`

// ExpandBulk takes the earliest due bulk batch whose source is not paused, inside tx, and
// creates its messages (a message whose dedupe key is taken is not: a batch handed twice), or
// drops it when its source was canceled. It returns the ids of the messages created, to be
// queued in tx, and whether there was a batch to take; two expanders take different batches.
func (s *Store) ExpandBulk(ctx context.Context, tx pgx.Tx) (org uuid.UUID, created []uuid.UUID, found bool, err error) {
	var id int64
	var state string
	err = tx.QueryRow(ctx, `
		SELECT b.id, b.organization_id, coalesce(st.state, '') FROM bulk_batches b
		LEFT JOIN source_states st ON st.organization_id = b.organization_id AND st.source_kind = b.source_kind
			AND st.source_id = b.source_id
		WHERE b.due_at <= now() AND st.state IS DISTINCT FROM 'paused'
		ORDER BY b.due_at, b.id LIMIT 1 FOR UPDATE OF b SKIP LOCKED`).Scan(&id, &org, &state)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, nil, false, nil
	}
	if err != nil {
		return uuid.Nil, nil, false, fmt.Errorf("take bulk batch: %w", err)
	}
	if state == SourceCanceled {
		if _, err := tx.Exec(ctx, `DELETE FROM bulk_batches WHERE id = $1`, id); err != nil {
			return uuid.Nil, nil, false, fmt.Errorf("drop canceled bulk batch: %w", err)
		}
		return org, nil, true, nil
	}
	rows, err := tx.Query(ctx, `WITH taken AS (DELETE FROM bulk_batches WHERE id = $1 RETURNING *),
		input AS (SELECT t.* FROM taken, unnest(`+bulkColumns+`) AS t`+outgoingInput+`)`+insertOutgoing, id)
	if err != nil {
		return uuid.Nil, nil, false, fmt.Errorf("expand bulk batch: %w", err)
	}
	stored, err := collectCreated(rows)
	if err != nil {
		return uuid.Nil, nil, false, fmt.Errorf("expand bulk batch: %w", err)
	}
	if err := outbox.EnqueueMany(ctx, tx, createdEvents(stored)); err != nil {
		return uuid.Nil, nil, false, err
	}
	created = make([]uuid.UUID, len(stored))
	for i, m := range stored {
		created[i] = m.ID
	}
	return org, created, true, nil
}
