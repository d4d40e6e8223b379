package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Billing intervals a plan's periods may have.
const (
	IntervalMonth = "month"
	IntervalYear  = "year"
)

// Plan is what renews an account's included credits.
type Plan struct {
	OrganizationID    uuid.UUID
	PricingModel      string
	IncludedPerPeriod *int32     // nil: included credits do not renew (granted by hand, if at all)
	BillingInterval   string     // month or year; "" when unknown
	CurrentPeriodEnd  *time.Time // nil when unknown
}

// renewable is the WHERE clause of an account whose included credits renew every period. A
// suspended or archived account's period waits: the first sweep after it is reactivated
// starts the current period, and the periods it missed are not granted.
const renewable = `pricing_model = 'full_service' AND included_per_period IS NOT NULL
	AND billing_status NOT IN ('suspended', 'archived')`

// renewBatch bounds the due accounts one sweep query lists.
const renewBatch = 500

// endSubscription is the SET list that ends an account's subscription when SetPlan moves it to
// per_message: a credit-only plan has none (its columns are all NULL). The billing interval and
// period end are the plan's too and stay, as SetAccount keeps them.
var endSubscription = func() string {
	var set []string
	for _, c := range []string{"subscription_id", "plan_type", "subscription_status", "paid_through", "next_billing_date", "subscription_provider"} {
		set = append(set, c+" = CASE WHEN EXCLUDED.pricing_model = 'per_message' THEN NULL ELSE a."+c+" END")
	}
	return strings.Join(set, ", ")
}()

// SetPlan sets the organization's pricing model, included credits per period (nil unless
// full_service), billing interval ("" keeps the account's) and period end (nil keeps the
// account's; a full_service account without one gets now, so its first period starts at
// once), creating the account if needed; other settings and the balances are left alone,
// except that per_message, credit-only, ends the account's subscription. A period end that is
// already past renews at once. It answers the plan and balance after.
func (s *Store) SetPlan(ctx context.Context, p Plan, now time.Time) (Plan, Balance, error) {
	var start *time.Time
	if p.IncludedPerPeriod != nil {
		start = &now
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO accounts AS a (organization_id, pricing_model, included_per_period, billing_interval, current_period_end)
		VALUES ($1, $2, $3, NULLIF($4, ''), COALESCE($5::timestamptz, $6::timestamptz))
		ON CONFLICT (organization_id) DO UPDATE SET
			pricing_model = EXCLUDED.pricing_model, included_per_period = EXCLUDED.included_per_period,
			billing_interval = COALESCE(EXCLUDED.billing_interval, a.billing_interval),
			current_period_end = COALESCE($5::timestamptz, a.current_period_end, $6::timestamptz),
			`+endSubscription+`,
			period_anchor = CASE WHEN COALESCE($5::timestamptz, a.current_period_end, $6::timestamptz)
				IS NOT DISTINCT FROM a.current_period_end THEN a.period_anchor END,
			updated_at = now()`,
		p.OrganizationID, p.PricingModel, p.IncludedPerPeriod, p.BillingInterval, p.CurrentPeriodEnd, start)
	if isCheck(err, "accounts_plan_period") {
		return Plan{}, Balance{}, ErrPlanNeedsPeriod
	}
	if err != nil {
		return Plan{}, Balance{}, fmt.Errorf("upsert plan: %w", err)
	}
	if _, err := s.renew(ctx, p.OrganizationID, now); err != nil {
		return Plan{}, Balance{}, err
	}
	return s.plan(ctx, p.OrganizationID)
}

// plan reads the organization's plan and balance.
func (s *Store) plan(ctx context.Context, org uuid.UUID) (Plan, Balance, error) {
	p := Plan{OrganizationID: org}
	var (
		interval *string
		b        Balance
	)
	err := s.pool.QueryRow(ctx, `
		SELECT pricing_model, included_per_period, billing_interval, current_period_end, available, included
		FROM accounts WHERE organization_id = $1`, org).
		Scan(&p.PricingModel, &p.IncludedPerPeriod, &interval, &p.CurrentPeriodEnd, &b.Available, &b.Included)
	if err != nil {
		return Plan{}, Balance{}, fmt.Errorf("select plan: %w", err)
	}
	p.BillingInterval = deref(interval)
	return p, b, nil
}

// RenewDue renews every account whose period ended by now, one statement each so that one
// account's failure holds back no other, and returns how many periods it granted. Sweeps may
// run at once (replicas): each renewal locks its account and is keyed in the ledger.
func (s *Store) RenewDue(ctx context.Context, now time.Time) (int, error) {
	var (
		after   uuid.UUID
		granted int
		errs    []error
	)
	for {
		rows, _ := s.pool.Query(ctx, `
			SELECT organization_id FROM accounts
			WHERE `+renewable+` AND current_period_end <= $1 AND organization_id > $2
			ORDER BY organization_id LIMIT $3`, now, after, renewBatch)
		orgs, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return granted, errors.Join(append(errs, fmt.Errorf("select due accounts: %w", err))...)
		}
		for _, org := range orgs {
			if err := ctx.Err(); err != nil {
				return granted, errors.Join(append(errs, err)...)
			}
			ok, err := s.renew(ctx, org, now)
			if err != nil {
				errs = append(errs, fmt.Errorf("organization %s: %w", org, err))
			} else if ok {
				granted++
			}
		}
		if len(orgs) < renewBatch {
			return granted, errors.Join(errs...)
		}
		after = orgs[len(orgs)-1]
	}
}

// renew rolls the organization's period over if it ended by now, in one statement: the
// included credits left expire, included_per_period are granted, the period end moves to the
// first one after now, and the expiry and renewal ledger rows explain it. It reports whether
// it granted. The renewal's key is the new period's end, so a period is granted once: a
// concurrent renewal waits for the account's row lock and then finds the period not over, and
// one after the period end was set back to a past value only moves it forward again. Credits
// on holds are not touched: they expire, if unspent, when the hold is released.
func (s *Store) renew(ctx context.Context, org uuid.UUID, now time.Time) (bool, error) {
	renewalID, err := newID()
	if err != nil {
		return false, err
	}
	expiryID, err := newID()
	if err != nil {
		return false, err
	}
	var granted bool
	err = s.pool.QueryRow(ctx, `
		WITH due AS (
			SELECT a.organization_id, a.included, a.included_per_period, p.anchor, n.period_end,
				to_char(n.period_end AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS key
			FROM accounts a,
				LATERAL (SELECT COALESCE(a.period_anchor, a.current_period_end) AS anchor) p,
				LATERAL (SELECT next_period_end(p.anchor, a.billing_interval, $2) AS period_end) n
			WHERE a.organization_id = $1 AND `+renewable+` AND a.current_period_end <= $2
			FOR UPDATE OF a
		), renewal AS (
			INSERT INTO ledger (organization_id, id, kind, key, available_delta, included_delta, held_delta, amount)
			SELECT organization_id, $3, 'renewal', key, 0, included_per_period, 0, included_per_period FROM due
			ON CONFLICT (organization_id, kind, key) DO NOTHING
			RETURNING organization_id
		), expiry AS (
			INSERT INTO ledger (organization_id, id, kind, key, available_delta, included_delta, held_delta, amount)
			SELECT due.organization_id, $4, 'expiry', due.key, 0, -due.included, 0, due.included
			FROM due JOIN renewal USING (organization_id) WHERE due.included > 0
		)
		UPDATE accounts a
		SET included = CASE WHEN renewal.organization_id IS NULL THEN a.included ELSE due.included_per_period END,
			period_number = a.period_number + CASE WHEN renewal.organization_id IS NULL THEN 0 ELSE 1 END,
			current_period_end = due.period_end, period_anchor = due.anchor, updated_at = now()
		FROM due LEFT JOIN renewal USING (organization_id)
		WHERE a.organization_id = due.organization_id
		RETURNING renewal.organization_id IS NOT NULL`,
		org, now, renewalID, expiryID).Scan(&granted)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("renew period: %w", err)
	}
	return granted, nil
}
