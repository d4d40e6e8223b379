package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Account is an organization's billing account with its balances.
type Account struct {
	OrganizationID            uuid.UUID
	PricingModel              string
	BillingStatus             string
	Brand                     string
	Subscription              *Subscription // nil on a credit-only plan
	CustomerPortalURL         *string
	SubscriptionManagementURL *string
	Balance                   Balance
}

// Subscription is the plan a subscription-based account pays for.
type Subscription struct {
	ID               string
	PlanType         string
	BillingInterval  string
	Status           string
	PaidThrough      *time.Time // a date
	CurrentPeriodEnd *time.Time
	NextBillingDate  *time.Time // a date
	Provider         string
}

// Product is a purchasable credit pack.
type Product struct {
	ID            string
	Name          string
	CreditsAmount int32
	PriceCents    int32
}

const accountColumns = `organization_id, pricing_model, billing_status, brand, subscription_id, plan_type,
	billing_interval, subscription_status, paid_through, current_period_end, next_billing_date,
	subscription_provider, customer_portal_url, subscription_management_url, available, included`

func scanAccount(row pgx.Row) (Account, error) {
	var (
		a                                       Account
		subID, plan, interval, status, provider *string
		paidThrough, periodEnd, nextBillingDate *time.Time
	)
	err := row.Scan(&a.OrganizationID, &a.PricingModel, &a.BillingStatus, &a.Brand, &subID, &plan, &interval,
		&status, &paidThrough, &periodEnd, &nextBillingDate, &provider, &a.CustomerPortalURL,
		&a.SubscriptionManagementURL, &a.Balance.Available, &a.Balance.Included)
	if err != nil {
		return Account{}, err
	}
	if subID != nil {
		a.Subscription = &Subscription{
			ID: *subID, PlanType: deref(plan), BillingInterval: deref(interval), Status: deref(status),
			PaidThrough: paidThrough, CurrentPeriodEnd: periodEnd, NextBillingDate: nextBillingDate, Provider: deref(provider),
		}
	}
	return a, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// DefaultAccount is what an organization without an account has: per_message, active, no
// subscription, no credits.
func DefaultAccount(org uuid.UUID) Account {
	return Account{OrganizationID: org, PricingModel: PricingPerMessage, BillingStatus: StatusActive, Brand: DefaultBrand}
}

// Account returns the organization's account, or DefaultAccount when it has none.
func (s *Store) Account(ctx context.Context, org uuid.UUID) (Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE organization_id = $1`, org))
	if errors.Is(err, pgx.ErrNoRows) {
		return DefaultAccount(org), nil
	}
	if err != nil {
		return Account{}, fmt.Errorf("select account: %w", err)
	}
	return a, nil
}

// SetAccount creates the account or replaces its settings; balances and the included credits
// per period are left alone. Without a subscription the billing interval and period end are
// kept: they are the plan's too, and dropping them would stop its renewals. A new period end
// becomes the anchor later periods are counted from. ErrPlanNeedsPeriod when a subscription
// would leave an account with included credits per period without a month or year interval
// or a period end.
func (s *Store) SetAccount(ctx context.Context, a Account) (Account, error) {
	sub := a.Subscription
	if sub == nil {
		sub = &Subscription{}
	}
	nullable := func(v string) *string {
		if a.Subscription == nil {
			return nil
		}
		return &v
	}
	row := s.pool.QueryRow(ctx, `
		INSERT INTO accounts AS a (organization_id, pricing_model, billing_status, brand, subscription_id, plan_type,
			billing_interval, subscription_status, paid_through, current_period_end, next_billing_date,
			subscription_provider, customer_portal_url, subscription_management_url)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT (organization_id) DO UPDATE SET
			pricing_model = EXCLUDED.pricing_model, billing_status = EXCLUDED.billing_status, brand = EXCLUDED.brand,
			subscription_id = EXCLUDED.subscription_id, plan_type = EXCLUDED.plan_type,
			billing_interval = CASE WHEN EXCLUDED.subscription_id IS NULL THEN a.billing_interval ELSE EXCLUDED.billing_interval END,
			current_period_end = CASE WHEN EXCLUDED.subscription_id IS NULL THEN a.current_period_end ELSE EXCLUDED.current_period_end END,
			period_anchor = CASE WHEN EXCLUDED.subscription_id IS NULL OR EXCLUDED.current_period_end IS NOT DISTINCT FROM a.current_period_end
				THEN a.period_anchor END,
			subscription_status = EXCLUDED.subscription_status, paid_through = EXCLUDED.paid_through,
			next_billing_date = EXCLUDED.next_billing_date, subscription_provider = EXCLUDED.subscription_provider,
			customer_portal_url = EXCLUDED.customer_portal_url,
			subscription_management_url = EXCLUDED.subscription_management_url, updated_at = now()
		RETURNING `+accountColumns,
		a.OrganizationID, a.PricingModel, a.BillingStatus, a.Brand, nullable(sub.ID), nullable(sub.PlanType),
		nullable(sub.BillingInterval), nullable(sub.Status), sub.PaidThrough, sub.CurrentPeriodEnd, sub.NextBillingDate,
		nullable(sub.Provider), a.CustomerPortalURL, a.SubscriptionManagementURL)
	out, err := scanAccount(row)
	if isCheck(err, "accounts_plan_period") {
		return Account{}, ErrPlanNeedsPeriod
	}
	if err != nil {
		return Account{}, fmt.Errorf("upsert account: %w", err)
	}
	return out, nil
}

// SetBillingStatus sets the account's billing status and nothing else; setting the status it
// has changes nothing, so an operator can repeat it. ErrNoAccount when the organization has
// none: an organization billing has never heard of is not created by a status change.
func (s *Store) SetBillingStatus(ctx context.Context, org uuid.UUID, status string) (Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `
		UPDATE accounts SET billing_status = $2,
			updated_at = CASE WHEN billing_status = $2 THEN updated_at ELSE now() END
		WHERE organization_id = $1
		RETURNING `+accountColumns, org, status))
	if errors.Is(err, pgx.ErrNoRows) {
		return Account{}, ErrNoAccount
	}
	if err != nil {
		return Account{}, fmt.Errorf("set billing status: %w", err)
	}
	return a, nil
}

// Products returns the active credit packs in catalog order.
func (s *Store) Products(ctx context.Context) ([]Product, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT id, name, credits_amount, price_cents FROM credit_products WHERE active ORDER BY position, id`)
	products, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Product])
	if err != nil {
		return nil, fmt.Errorf("select credit products: %w", err)
	}
	return products, nil
}
