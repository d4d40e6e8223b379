package billing_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

// statusJSON is the status as the gateway prints it (every field, nulls included).
func statusJSON(t *testing.T, st *billingv1.BillingStatus) map[string]any {
	t.Helper()
	raw, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(st)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func getStatus(t *testing.T, e *env, org uuid.UUID) *billingv1.BillingStatus {
	t.Helper()
	res, err := e.c.GetBillingStatus(as(org), &billingv1.GetBillingStatusRequest{})
	require.NoError(t, err)
	return res.GetStatus()
}

var catalog = []any{
	map[string]any{"id": "credits-500", "name": "500 credits", "credits_amount": 500.0, "price_cents": 1500.0},
	map[string]any{"id": "credits-2000", "name": "2,000 credits", "credits_amount": 2000.0, "price_cents": 5000.0},
	map[string]any{"id": "credits-10000", "name": "10,000 credits", "credits_amount": 10000.0, "price_cents": 20000.0},
	map[string]any{"id": "credits-50000", "name": "50,000 credits", "credits_amount": 50000.0, "price_cents": 80000.0},
}

func TestAnOrganizationWithoutAnAccountIsPerMessageWithNoCredits(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := uuid.New()
	assert.Equal(t, map[string]any{
		"organization_id":           org.String(),
		"brand":                     "chorus",
		"billing_status":            "active",
		"pricing_model":             "per_message",
		"subscription":              nil,
		"credits":                   map[string]any{"available": 0.0, "included": 0.0, "total": 0.0},
		"portal_urls":               map[string]any{"customer_portal": nil, "subscription_management": nil},
		"available_credit_products": catalog,
	}, statusJSON(t, getStatus(t, e, org)))
	res, err := e.c.GetCreditBalance(as(org), &billingv1.GetCreditBalanceRequest{})
	require.NoError(t, err)
	assert.Zero(t, res.GetBalance())
}

func TestStatusOfEachPricingModel(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	periodEnd := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	sub := &billingv1.Subscription{
		Id: "sub_123", PlanType: "growth", BillingInterval: "month", Status: "active",
		PaidThrough: proto.String("2026-02-28"), CurrentPeriodEnd: timestamppb.New(periodEnd),
		NextBillingDate: proto.String("2026-03-01"), Provider: "stripe",
	}
	portal := &billingv1.PortalUrls{
		CustomerPortal: wrapperspb.String("https://billing.example.com/portal"), SubscriptionManagement: wrapperspb.String("https://billing.example.com/plan"),
	}
	wantSub := map[string]any{
		"id": "sub_123", "plan_type": "growth", "billing_interval": "month", "status": "active",
		"paid_through": "2026-02-28", "current_period_end": "2026-03-01T00:00:00Z",
		"next_billing_date": "2026-03-01", "provider": "stripe",
	}
	wantPortal := map[string]any{"customer_portal": "https://billing.example.com/portal", "subscription_management": "https://billing.example.com/plan"}

	t.Run("per_message", func(t *testing.T) {
		org := e.account(t, "per_message", "")
		e.grant(t, org, 250, false)
		m := statusJSON(t, getStatus(t, e, org))
		assert.Equal(t, "per_message", m["pricing_model"])
		assert.Equal(t, "active", m["billing_status"], "billing status defaults to active")
		assert.Nil(t, m["subscription"], "a credit-only plan has no subscription")
		assert.Equal(t, map[string]any{"available": 250.0, "included": 0.0, "total": 250.0}, m["credits"])
		assert.Equal(t, map[string]any{"customer_portal": nil, "subscription_management": nil}, m["portal_urls"])
	})
	t.Run("full_service", func(t *testing.T) {
		org := uuid.New()
		_, err := e.c.SetAccount(ctx, &billingv1.SetAccountRequest{
			OrganizationId: org.String(), PricingModel: "full_service", BillingStatus: "overage_warning", Brand: "Acme SMS",
			Subscription: sub, PortalUrls: portal,
		})
		require.NoError(t, err)
		e.grant(t, org, 1000, true)
		e.grant(t, org, 40, false)
		assert.Equal(t, map[string]any{
			"organization_id":           org.String(),
			"brand":                     "Acme SMS",
			"billing_status":            "overage_warning",
			"pricing_model":             "full_service",
			"subscription":              wantSub,
			"credits":                   map[string]any{"available": 40.0, "included": 1000.0, "total": 1040.0},
			"portal_urls":               wantPortal,
			"available_credit_products": catalog,
		}, statusJSON(t, getStatus(t, e, org)))
		res, err := e.c.GetCreditBalance(as(org), &billingv1.GetCreditBalanceRequest{})
		require.NoError(t, err)
		assert.Equal(t, int32(40), res.GetBalance(), "the balance is the available credits; included ones are in the status")
	})
	t.Run("unlimited", func(t *testing.T) {
		org := uuid.New()
		unlimitedSub := &billingv1.Subscription{Id: "sub_9", PlanType: "unlimited", BillingInterval: "year", Status: "active", Provider: "stripe"}
		res, err := e.c.SetAccount(ctx, &billingv1.SetAccountRequest{
			OrganizationId: org.String(), PricingModel: "unlimited", Subscription: unlimitedSub,
			PortalUrls: &billingv1.PortalUrls{CustomerPortal: wrapperspb.String("https://billing.example.com/portal")},
		})
		require.NoError(t, err)
		m := statusJSON(t, res.GetStatus())
		assert.Equal(t, "unlimited", m["pricing_model"])
		assert.Equal(t, map[string]any{
			"id": "sub_9", "plan_type": "unlimited", "billing_interval": "year", "status": "active",
			"current_period_end": nil, "provider": "stripe",
		}, m["subscription"], "unknown dates: the spec's date strings absent, the period end null")
		assert.Equal(t, map[string]any{"customer_portal": "https://billing.example.com/portal", "subscription_management": nil}, m["portal_urls"])
		assert.Equal(t, statusJSON(t, getStatus(t, e, org)), m, "SetAccount answers the status GetBillingStatus then reports")
	})
}

// SetAccount replaces the settings and never the balances.
func TestSetAccountReplacesSettingsNotCredits(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "full_service", "active")
	e.grant(t, org, 7, true)
	e.grant(t, org, 5, false)
	_, err := e.c.SetAccount(context.Background(), &billingv1.SetAccountRequest{
		OrganizationId: org.String(), PricingModel: "full_service", BillingStatus: "past_due",
	})
	require.NoError(t, err)
	st := getStatus(t, e, org)
	assert.Equal(t, "past_due", st.GetBillingStatus())
	assert.Nil(t, st.GetSubscription())
	assert.Equal(t, int32(7), st.GetCredits().GetIncluded())
	assert.Equal(t, int32(5), st.GetCredits().GetAvailable())
	e.assertLedgerSums(t, org)
}

func TestSetAccountNamesEveryBadField(t *testing.T) {
	t.Parallel()
	e := start(t)
	_, err := e.c.SetAccount(context.Background(), &billingv1.SetAccountRequest{
		OrganizationId: "nope", PricingModel: "free", BillingStatus: "happy",
		Subscription: &billingv1.Subscription{PaidThrough: proto.String("28/02/2026"), NextBillingDate: proto.String("2026-02-30")},
		PortalUrls:   &billingv1.PortalUrls{CustomerPortal: wrapperspb.String("javascript:alert(1)"), SubscriptionManagement: wrapperspb.String("/relative")},
	})
	assert.ElementsMatch(t, []string{
		"organizationId", "pricingModel", "billingStatus",
		"subscription.id", "subscription.planType", "subscription.billingInterval", "subscription.status",
		"subscription.paidThrough", "subscription.nextBillingDate",
		"portalUrls.customerPortal", "portalUrls.subscriptionManagement",
	}, badFields(t, err))
	_, err = e.c.SetAccount(context.Background(), &billingv1.SetAccountRequest{OrganizationId: uuid.NewString()})
	assert.Equal(t, []string{"pricingModel"}, badFields(t, err), "the pricing model is required")
}

// An operator suspends an account and reactivates it: the status is all that changes, and a
// repeat of the same call is harmless.
func TestSetBillingStatusSuspendsAndReactivates(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	org := e.account(t, "full_service", "active")
	e.grant(t, org, 7, true)
	e.grant(t, org, 5, false)
	before := statusJSON(t, getStatus(t, e, org))

	for range 2 {
		res, err := e.c.SetBillingStatus(ctx, &billingv1.SetBillingStatusRequest{OrganizationId: org.String(), Status: "suspended"})
		require.NoError(t, err)
		assert.Equal(t, "suspended", res.GetStatus().GetBillingStatus())
	}
	_, err := charge(e, org, uuid.New(), 1)
	assertReason(t, err, codes.FailedPrecondition, "BILLING_SUSPENDED")
	_, err = e.c.PlaceHold(as(org), &billingv1.PlaceHoldRequest{HoldId: uuid.NewString(), Credits: 1})
	assertReason(t, err, codes.FailedPrecondition, "BILLING_SUSPENDED")

	res, err := e.c.SetBillingStatus(ctx, &billingv1.SetBillingStatusRequest{OrganizationId: org.String(), Status: "active"})
	require.NoError(t, err)
	assert.Equal(t, before, statusJSON(t, res.GetStatus()), "reactivating restores the account as it was")
	_, err = charge(e, org, uuid.New(), 1)
	require.NoError(t, err)
	e.assertLedgerSums(t, org)
}

func TestSetBillingStatusValidation(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	org := e.account(t, "per_message", "active")
	_, err := e.c.SetBillingStatus(ctx, &billingv1.SetBillingStatusRequest{OrganizationId: org.String(), Status: "frozen"})
	assert.Equal(t, []string{"status"}, badFields(t, err))
	_, err = e.c.SetBillingStatus(ctx, &billingv1.SetBillingStatusRequest{OrganizationId: org.String()})
	assert.Equal(t, []string{"status"}, badFields(t, err), "the status is required")
	_, err = e.c.SetBillingStatus(ctx, &billingv1.SetBillingStatusRequest{OrganizationId: "nope", Status: "active"})
	assert.Equal(t, []string{"organizationId"}, badFields(t, err))
	assert.Equal(t, "active", getStatus(t, e, org).GetBillingStatus(), "a refused change changes nothing")

	unknown := uuid.New()
	_, err = e.c.SetBillingStatus(ctx, &billingv1.SetBillingStatusRequest{OrganizationId: unknown.String(), Status: "suspended"})
	assertReason(t, err, codes.NotFound, "NOT_FOUND")
	assert.Equal(t, "active", getStatus(t, e, unknown).GetBillingStatus(), "an unknown organization gets no account")
}

// A credit-only plan (per_message) has no subscription: SetAccount refuses one naming the
// field, and SetPlan moving an account to per_message ends its subscription, whatever plan
// it moves to later; the balances and the plan's interval stay.
func TestCreditOnlyPlanHasNoSubscription(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	sub := &billingv1.Subscription{Id: "sub_1", PlanType: "pro", BillingInterval: "month", Status: "active",
		PaidThrough: proto.String("2026-02-28"), NextBillingDate: proto.String("2026-03-01"), Provider: "stripe"}
	_, err := e.c.SetAccount(ctx, &billingv1.SetAccountRequest{OrganizationId: uuid.NewString(), PricingModel: "per_message", Subscription: sub})
	assert.Equal(t, []string{"subscription"}, badFields(t, err))

	org := uuid.New()
	_, err = e.c.SetAccount(ctx, &billingv1.SetAccountRequest{OrganizationId: org.String(), PricingModel: "full_service", Subscription: sub})
	require.NoError(t, err)
	e.grant(t, org, 5, false)
	require.NotNil(t, getStatus(t, e, org).GetSubscription())
	res, err := e.c.SetPlan(ctx, &billingv1.SetPlanRequest{OrganizationId: org.String(), PricingModel: "per_message"})
	require.NoError(t, err)
	assert.Equal(t, "month", res.GetPlan().GetBillingInterval(), "the plan's interval stays")
	st := getStatus(t, e, org)
	assert.Equal(t, "per_message", st.GetPricingModel())
	assert.Nil(t, st.GetSubscription(), "per_message ends the subscription")
	assert.Equal(t, int32(5), st.GetCredits().GetAvailable())
	_, err = e.c.SetPlan(ctx, &billingv1.SetPlanRequest{OrganizationId: org.String(), PricingModel: "unlimited"})
	require.NoError(t, err)
	assert.Nil(t, getStatus(t, e, org).GetSubscription(), "an ended subscription does not come back")
	e.assertLedgerSums(t, org)
}
