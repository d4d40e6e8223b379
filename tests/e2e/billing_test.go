package e2e

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/registry"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

// newBillingEnv is a stack on loopback ports with a client of its billing service, through
// which the tests do what operators and other services do (accounts, grants).
func newBillingEnv(t *testing.T) (*env, billingv1.BillingServiceClient) {
	t.Helper()
	e := newEnv(t, map[string]string{"CHORUS_BILLING_ADDR": "127.0.0.1:0"})
	conn, err := grpc.NewClient(e.st.Addr(registry.Billing), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return e, billingv1.NewBillingServiceClient(conn)
}

func TestBillingStatusAndBalanceOverREST(t *testing.T) {
	t.Parallel()
	e, billing := newBillingEnv(t)
	c := e.newMember("read")

	res := c.do("GET", "/api/billing/status", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	st := res.JSON(t)
	products, _ := st["available_credit_products"].([]any)
	require.NotEmpty(t, products, "the seeded catalog")
	assert.Equal(t, map[string]any{"id": "credits-500", "name": "500 credits", "credits_amount": 500.0, "price_cents": 1500.0}, products[0])
	delete(st, "available_credit_products")
	assert.Equal(t, map[string]any{
		"organization_id": c.org,
		"brand":           "chorus",
		"billing_status":  "active",
		"pricing_model":   "per_message",
		"subscription":    nil,
		"credits":         map[string]any{"available": 0.0, "included": 0.0, "total": 0.0},
		"portal_urls":     map[string]any{"customer_portal": nil, "subscription_management": nil},
	}, st, "an organization without an account: snake_case keys, nulls printed")
	res = c.do("GET", "/api/credits/balance", nil)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, map[string]any{"balance": 0.0}, res.JSON(t))

	ctx := context.Background()
	_, err := billing.SetAccount(ctx, &billingv1.SetAccountRequest{
		OrganizationId: c.org, PricingModel: "full_service", Brand: "Acme",
		Subscription: &billingv1.Subscription{
			Id: "sub_1", PlanType: "pro", BillingInterval: "month", Status: "active",
			PaidThrough: proto.String("2026-05-31"), Provider: "stripe",
		},
		PortalUrls: &billingv1.PortalUrls{CustomerPortal: wrapperspb.String("https://pay.example.com/p")},
	})
	require.NoError(t, err)
	_, err = billing.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: c.org, Amount: 300, Included: true, IdempotencyKey: "period-1"})
	require.NoError(t, err)
	_, err = billing.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: c.org, Amount: 25, IdempotencyKey: "order-1"})
	require.NoError(t, err)

	st = c.do("GET", "/api/billing/status", nil).JSON(t)
	assert.Equal(t, "full_service", st["pricing_model"])
	assert.Equal(t, "Acme", st["brand"])
	assert.Equal(t, map[string]any{
		"id": "sub_1", "plan_type": "pro", "billing_interval": "month", "status": "active",
		"paid_through": "2026-05-31", "current_period_end": nil, "provider": "stripe",
	}, st["subscription"], "an unknown next_billing_date is absent, never \"\" (no date) nor null (a string)")
	assert.Equal(t, map[string]any{"available": 25.0, "included": 300.0, "total": 325.0}, st["credits"])
	assert.Equal(t, map[string]any{"customer_portal": "https://pay.example.com/p", "subscription_management": nil}, st["portal_urls"])
	assert.Equal(t, map[string]any{"balance": 25.0}, c.do("GET", "/api/credits/balance", nil).JSON(t),
		"the balance is the available (purchased) credits")

	// Another organization sees only its own.
	other := e.newMember("admin")
	assert.Equal(t, map[string]any{"balance": 0.0}, other.do("GET", "/api/credits/balance", nil).JSON(t))
}

func TestBillingRoutesNeedATokenAndAccess(t *testing.T) {
	t.Parallel()
	e, _ := newBillingEnv(t)
	member := e.newMember("read")
	outsider := e.newMember("admin")
	for _, path := range []string{"/api/billing/status", "/api/credits/balance"} {
		res := (&client{e: e, org: member.org}).do("GET", path, nil)
		assert.Equal(t, http.StatusUnauthorized, res.Status, path)
		assert.Equal(t, "UNAUTHENTICATED", res.ErrCode(t), path)

		res = (&client{e: e, token: outsider.token, org: member.org}).do("GET", path, nil)
		assert.Equal(t, http.StatusForbidden, res.Status, "%s of an organization the user is not a member of", path)
		assert.Equal(t, "FORBIDDEN", res.ErrCode(t), path)

		res = (&client{e: e, token: member.token}).do("GET", path, nil)
		assert.Equal(t, http.StatusForbidden, res.Status, "%s without x-organization-id", path)
	}
	res := member.do("GET", "/readyz", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, "SERVING", res.JSON(t)["services"].(map[string]any)["billing"])
}
