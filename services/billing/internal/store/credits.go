package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Grant adds amount purchased (or, when included, included) credits once per key; a retry
// with the same key and values changes nothing and answers the balance now. The account is
// created with the defaults when the organization has none.
func (s *Store) Grant(ctx context.Context, org uuid.UUID, key string, amount int32, included bool) (Balance, error) {
	id, err := newID()
	if err != nil {
		return Balance{}, err
	}
	var b Balance
	err = s.pool.QueryRow(ctx, `
		WITH entry AS (
			INSERT INTO ledger (organization_id, id, kind, key, available_delta, included_delta, held_delta, amount)
			SELECT $1, $2, 'grant', $3,
				CASE WHEN $5::boolean THEN 0 ELSE $4::integer END, CASE WHEN $5::boolean THEN $4::integer ELSE 0 END, 0, $4::integer
			WHERE NOT $5::boolean
				OR EXISTS (SELECT 1 FROM accounts WHERE organization_id = $1 AND pricing_model = 'full_service')
			ON CONFLICT (organization_id, kind, key) DO NOTHING
			RETURNING available_delta, included_delta
		)
		INSERT INTO accounts AS a (organization_id, available, included)
		SELECT $1, available_delta, included_delta FROM entry
		ON CONFLICT (organization_id) DO UPDATE
		SET available = a.available + EXCLUDED.available, included = a.included + EXCLUDED.included, updated_at = now()
		RETURNING available, included`,
		org, id, key, amount, included).Scan(&b.Available, &b.Included)
	switch {
	case err == nil:
		return b, nil
	case isOverflow(err):
		return Balance{}, ErrOverflow
	case !errors.Is(err, pgx.ErrNoRows):
		return Balance{}, fmt.Errorf("grant: %w", err)
	}
	// Nothing granted: the key was used before, or included credits were refused.
	var prevAmount, prevIncluded int32
	err = s.pool.QueryRow(ctx, `
		SELECT amount, included_delta FROM ledger WHERE organization_id = $1 AND kind = 'grant' AND key = $2`,
		org, key).Scan(&prevAmount, &prevIncluded)
	if errors.Is(err, pgx.ErrNoRows) {
		return Balance{}, ErrIncludedNeedsFullService
	}
	if err != nil {
		return Balance{}, fmt.Errorf("select grant: %w", err)
	}
	if prevAmount != amount || (prevIncluded > 0) != included {
		return Balance{}, ErrKeyReused
	}
	return s.balance(ctx, org)
}

// Debit is what one message cost.
type Debit struct {
	Charged         int32
	ChargedIncluded int32 // the part taken from included credits
}

// Charge debits credits (> 0) for message once: a retry answers the first charge and the
// balance now. On an unlimited plan it debits nothing; on a suspended or archived account it
// fails with ErrSuspended, and without the credits with ErrInsufficient, changing nothing.
func (s *Store) Charge(ctx context.Context, org, message uuid.UUID, credits int32) (Debit, Balance, error) {
	id, err := newID()
	if err != nil {
		return Debit{}, Balance{}, err
	}
	var (
		d Debit
		b Balance
	)
	err = s.debitLocked(ctx, org, `
		WITH `+debitCTEs(`NOT EXISTS (SELECT 1 FROM ledger WHERE organization_id = $1 AND kind = 'debit' AND key = $2)`)+`,
		entry AS (
			INSERT INTO ledger (organization_id, id, kind, key, available_delta, included_delta, held_delta, amount)
			SELECT $1, $4, 'debit', $2, -($3::integer - from_included), -from_included, 0, $3::integer FROM debit
		)
		SELECT available, included, from_included FROM debit`,
		[]any{org, message.String(), credits, id}, &b.Available, &b.Included, &d.ChargedIncluded)
	if err == nil {
		d.Charged = credits
		return d, b, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) && !isUnique(err) {
		return Debit{}, Balance{}, fmt.Errorf("charge: %w", err)
	}
	// Nothing debited: say why.
	if d, found, err := s.priorDebit(ctx, org, message, credits); err != nil || found {
		if err != nil {
			return Debit{}, Balance{}, err
		}
		b, err := s.balance(ctx, org)
		return d, b, err
	}
	a, err := s.Account(ctx, org)
	if err != nil {
		return Debit{}, Balance{}, err
	}
	switch {
	case a.BillingStatus == StatusSuspended || a.BillingStatus == StatusArchived:
		return Debit{}, Balance{}, ErrSuspended
	case a.PricingModel == PricingUnlimited:
		return Debit{}, a.Balance, nil
	}
	return Debit{}, Balance{}, ErrInsufficient
}

// priorDebit returns the debit recorded for message, if any; ErrKeyReused when it was for
// another number of credits.
func (s *Store) priorDebit(ctx context.Context, org, message uuid.UUID, credits int32) (Debit, bool, error) {
	var d Debit
	err := s.pool.QueryRow(ctx, `
		SELECT amount, -included_delta FROM ledger WHERE organization_id = $1 AND kind = 'debit' AND key = $2`,
		org, message.String()).Scan(&d.Charged, &d.ChargedIncluded)
	if errors.Is(err, pgx.ErrNoRows) {
		return Debit{}, false, nil
	}
	if err != nil {
		return Debit{}, false, fmt.Errorf("select debit: %w", err)
	}
	if d.Charged != credits {
		return Debit{}, false, ErrKeyReused
	}
	return d, true, nil
}
