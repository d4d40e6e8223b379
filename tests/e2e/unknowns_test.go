package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

// What the API answers where a value is unknown (issue 25 item 11): never a made-up value
// such as "" for a date, but null where the OpenAPI document says nullable, or no key where it
// does not require one.

// TestRefusedReplyHasNoSentAt: a reply the carrier refuses was never sent, so its sentAt is
// null (documented nullable), not a time.
func TestRefusedReplyHasNoSentAt(t *testing.T) {
	t.Parallel()
	const token = "twilio-refusing-token"
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"code": 21211, "message": "The 'To' number is not a valid phone number.", "status": 400}`))
	}))
	t.Cleanup(refusing.Close)
	e := newMsgEnv(t, twilioStack(refusing.URL, token, nil))
	tn := e.newTenant("+13125550160", 5)
	tn.contact("+12025550143", "Ada", true)

	res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "We open at 9."})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	out := res.JSON(t)
	assert.Equal(t, false, out["success"])
	log := out["messageLog"].(map[string]any)
	assert.Equal(t, "failed", log["status"])
	assert.Contains(t, log, "sentAt", "the key is printed")
	assert.Nil(t, log["sentAt"], "nothing was sent: no time")
}

// TestUnknownSubscriptionDatesAreAbsent: a subscription whose dates are unknown has no
// paid_through or next_billing_date key ("" is no date, and the spec's strings are never
// null), and a null current_period_end (a nullable timestamp).
func TestUnknownSubscriptionDatesAreAbsent(t *testing.T) {
	t.Parallel()
	e, billing := newBillingEnv(t)
	c := e.newMember("read")
	_, err := billing.SetAccount(context.Background(), &billingv1.SetAccountRequest{
		OrganizationId: c.org, PricingModel: "unlimited", Brand: "Acme",
		Subscription: &billingv1.Subscription{Id: "sub_9", PlanType: "unlimited", BillingInterval: "year", Status: "active", Provider: "stripe"},
	})
	require.NoError(t, err)

	res := c.do("GET", "/api/billing/status", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, map[string]any{
		"id": "sub_9", "plan_type": "unlimited", "billing_interval": "year", "status": "active",
		"current_period_end": nil, "provider": "stripe",
	}, res.JSON(t)["subscription"])
}
