package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hardening of input and of peers' refusals (issue 26).

// A suspended account's test send answers 402 BILLING_SUSPENDED as its replies do, not a 500:
// messaging's refusal is translated by campaigns, not wrapped and masked.
func TestHardenTestSendOnSuspendedAccount(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550260", 10)
	id := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": "T", "message": "Hi"}), http.StatusCreated).str("id")

	e.setBillingStatus(tn.org, "suspended")
	res := tn.doWith("POST", "/api/campaigns/"+id+"/test-send", map[string]any{"recipients": []string{"+12025556101"}},
		http.Header{"X-Request-Id": {"req-suspended-test"}})
	assert.Equal(t, http.StatusPaymentRequired, res.Status, "%s", res.Body)
	assert.JSONEq(t, `{"error":{"code":"BILLING_SUSPENDED","message":"the organization's billing is suspended","requestId":"req-suspended-test"}}`, string(res.Body))

	e.setBillingStatus(tn.org, "active")
	res = tn.do("POST", "/api/campaigns/"+id+"/test-send", map[string]any{"recipients": []string{"+12025556101"}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
}
