package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// RefundDebit gives back the credits debited for message, once: a direct charge returns to
// the balances it came from; a debit posted against a hold returns as purchased credits, since
// the hold may be released by then and which of its balances paid is not recorded. It answers
// the credits the refund gave back (a repeat answers the same; a message never debited, 0).
func (s *Store) RefundDebit(ctx context.Context, org, message uuid.UUID) (int32, Balance, error) {
	id, err := newID()
	if err != nil {
		return 0, Balance{}, err
	}
	var refunded int32
	var b Balance
	err = s.pool.QueryRow(ctx, `
		WITH debit AS (
			SELECT amount,
				CASE WHEN held_delta < 0 THEN amount ELSE -available_delta END AS to_available,
				CASE WHEN held_delta < 0 THEN 0 ELSE -included_delta END AS to_included
			FROM ledger
			WHERE organization_id = $1 AND kind = 'debit' AND key = $2 AND amount > 0
				AND NOT EXISTS (SELECT 1 FROM ledger WHERE organization_id = $1 AND kind = 'refund' AND key = $2)
		), back AS (
			UPDATE accounts a
			SET available = a.available + debit.to_available, included = a.included + debit.to_included, updated_at = now()
			FROM debit
			WHERE a.organization_id = $1
			RETURNING a.available, a.included, debit.amount, debit.to_available, debit.to_included
		), entry AS (
			INSERT INTO ledger (organization_id, id, kind, key, available_delta, included_delta, held_delta, amount)
			SELECT $1, $3, 'refund', $2, to_available, to_included, 0, amount FROM back
		)
		SELECT amount, available, included FROM back`,
		org, message.String(), id).Scan(&refunded, &b.Available, &b.Included)
	if err == nil {
		return refunded, b, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) && !isUnique(err) {
		return 0, Balance{}, fmt.Errorf("refund debit: %w", err)
	}
	// Nothing refunded now: refunded before (or concurrently), or never debited.
	err = s.pool.QueryRow(ctx, `SELECT amount FROM ledger WHERE organization_id = $1 AND kind = 'refund' AND key = $2`,
		org, message.String()).Scan(&refunded)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, Balance{}, fmt.Errorf("select refund: %w", err)
	}
	b, err = s.balance(ctx, org)
	return refunded, b, err
}
