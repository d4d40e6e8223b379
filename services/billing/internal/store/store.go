// Package store is the billing service's SQL: accounts and their plans' periods, the
// append-only credit ledger, holds and the product catalog. Every balance change is one
// statement that moves the balance and writes its ledger rows together, guarded by the
// ledger's unique (kind, key) and the balances' CHECKs, so retries are no-ops and no
// interleaving can overdraw. Go never computes a new balance.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Errors the server maps to API errors.
var (
	ErrNotFound = errors.New("not found")
	// ErrNoAccount: the organization has no billing account.
	ErrNoAccount    = errors.New("no billing account")
	ErrInsufficient = errors.New("insufficient credits")
	// ErrSuspended: a suspended or archived account cannot spend.
	ErrSuspended = errors.New("billing suspended")
	// ErrKeyReused: the idempotency key, message id or hold id was used with another amount.
	ErrKeyReused = errors.New("key already used with other values")
	// ErrIncludedNeedsFullService: only a full_service account has included credits.
	ErrIncludedNeedsFullService = errors.New("included credits need a full_service account")
	// ErrOverflow: the balance would not fit in 32 bits.
	ErrOverflow = errors.New("balance overflow")
	// ErrHoldReleased: nothing can be posted to a released hold.
	ErrHoldReleased = errors.New("hold released")
	// ErrHoldExhausted: the post is larger than what the hold has left.
	ErrHoldExhausted = errors.New("hold exhausted")
	// ErrPlanNeedsPeriod: an account with included credits per period must keep a month or
	// year billing interval and a period end.
	ErrPlanNeedsPeriod = errors.New("a plan with included credits per period needs a billing interval and a period end")
)

// Pricing models and billing statuses the accounts table allows.
const (
	PricingUnlimited   = "unlimited"
	PricingPerMessage  = "per_message"
	PricingFullService = "full_service"

	StatusActive         = "active"
	StatusPastDue        = "past_due"
	StatusSuspended      = "suspended"
	StatusOverageWarning = "overage_warning"
	StatusArchived       = "archived"

	// DefaultBrand is the brand of an account that names none.
	DefaultBrand = "chorus"
)

// Store runs the billing queries.
type Store struct{ pool *pgxpool.Pool }

// New returns a Store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Balance is an account's spendable credits; credits on hold are in neither.
type Balance struct {
	Available int32 // purchased
	Included  int32 // included in a full_service period
}

// balance reads the organization's balances; no account has none.
func (s *Store) balance(ctx context.Context, org uuid.UUID) (Balance, error) {
	var b Balance
	err := s.pool.QueryRow(ctx, `SELECT available, included FROM accounts WHERE organization_id = $1`, org).Scan(&b.Available, &b.Included)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Balance{}, fmt.Errorf("select balance: %w", err)
	}
	return b, nil
}

// spendable is the WHERE clause of an account that may spend credits.
const spendable = `pricing_model <> 'unlimited' AND billing_status NOT IN ('suspended', 'archived')`

// debitCTEs lock the organization's ($1) account when it may spend and notYet holds, and take
// $3 credits from it (included first on full_service) when it has them: CTE "debit" returns
// the new available and included, from_included, the part taken from included, and the
// period_number they were taken in. Nothing happens, and debit is empty, otherwise.
func debitCTEs(notYet string) string {
	return `
	cur AS (
		SELECT organization_id,
			CASE WHEN pricing_model = 'full_service' THEN LEAST(included, $3::integer) ELSE 0 END AS from_included
		FROM accounts
		WHERE organization_id = $1 AND ` + spendable + ` AND ` + notYet + `
		FOR UPDATE
	), debit AS (
		UPDATE accounts a
		SET included = a.included - cur.from_included,
			available = a.available - ($3::integer - cur.from_included),
			updated_at = now()
		FROM cur
		WHERE a.organization_id = cur.organization_id AND a.available >= $3::integer - cur.from_included
		RETURNING a.available, a.included, cur.from_included, a.period_number
	)`
}

// debitLocked runs a debitCTEs statement q after taking the organization's account row lock
// in the same transaction, and scans its row into dest. The statement then starts once no
// concurrent change (a period renewal) can be under way, so it computes from the account as it
// is: left to wait for the lock inside the statement, its CTE and its UPDATE could see two
// versions of the row (seen as a CHECK violation under concurrent renewals).
func (s *Store) debitLocked(ctx context.Context, org uuid.UUID, q string, args []any, dest ...any) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE organization_id = $1 FOR UPDATE`, org); err != nil {
			return fmt.Errorf("lock account: %w", err)
		}
		return tx.QueryRow(ctx, q, args...).Scan(dest...)
	})
}

// isUnique reports whether err is a unique violation: a concurrent retry of the same key won.
func isUnique(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// isCheck reports whether err violates the CHECK constraint named constraint.
func isCheck(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && pgErr.ConstraintName == constraint
}

// isOverflow reports whether err is an integer out of range.
func isOverflow(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "22003"
}

func newID() (uuid.UUID, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.Nil, fmt.Errorf("new id: %w", err)
	}
	return id, nil
}
