package e2e

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/apierr"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

// setBillingStatus does what `chorusctl billing set-status` does.
func (e *msgEnv) setBillingStatus(org, st string) {
	e.t.Helper()
	res, err := e.billing.SetBillingStatus(context.Background(), &billingv1.SetBillingStatusRequest{OrganizationId: org, Status: st})
	require.NoError(e.t, err)
	require.Equal(e.t, st, res.GetStatus().GetBillingStatus())
}

// An operator suspends an account: its replies answer 402 BILLING_SUSPENDED and cost nothing;
// once reactivated they go out again.
func TestBillingSuspendedAccountsCannotReply(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+12025550100", 5)
	tn.contact("+12025550143", "Ada", true)
	const path = "/api/conversations/%2B12025550143/reply"

	e.setBillingStatus(tn.org, "suspended")
	res := tn.doWith("POST", path, map[string]any{"message": "hi"}, http.Header{"X-Request-Id": {"req-suspended-1"}})
	assert.Equal(t, http.StatusPaymentRequired, res.Status)
	assert.JSONEq(t, `{"error":{"code":"BILLING_SUSPENDED","message":"the organization's billing is suspended","requestId":"req-suspended-1"}}`, string(res.Body))
	assert.Equal(t, 5.0, tn.balance(), "a refused reply costs nothing")
	assert.Empty(t, tn.thread("+12025550143"), "a refused reply is not logged")

	e.setBillingStatus(tn.org, "active")
	res = tn.do("POST", path, map[string]any{"message": "hi"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, true, res.JSON(t)["success"])
	assert.Equal(t, 4.0, tn.balance())
}

// A suspended account's bulk send (campaigns, polls) is refused whole, before anything is
// queued; reactivated, the same messages are queued and delivered.
func TestBillingSuspendedAccountsCannotSendInBulk(t *testing.T) {
	t.Parallel()
	b := newBulkEnv(t)
	tn := b.newTenant("+12025550100", 5)
	tn.contact("+12025550143", "Ada", true)
	msg := campaignMsg("campaign:suspended:1", "+12025550143", "Sale starts Friday")

	b.setBillingStatus(tn.org, "suspended")
	_, err := b.send(tn, msg)
	require.Error(t, err)
	assert.Equal(t, codes.FailedPrecondition, status.Code(err))
	assert.Equal(t, apierr.ReasonBillingSuspended, apierr.Reason(err))
	assert.Equal(t, "the organization's billing is suspended", status.Convert(err).Message())
	assert.Empty(t, tn.thread("+12025550143"), "nothing was queued")

	b.setBillingStatus(tn.org, "active")
	ids := b.mustSend(tn, msg)
	awaitStatus(tn, "+12025550143", ids[0], "delivered")
	assert.Equal(t, 4.0, tn.balance())
}
