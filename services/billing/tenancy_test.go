package billing_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/apierr"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

// Organization B naming A's hold gets exactly what a missing hold gets, and A's hold and
// credits are untouched.
func TestAnotherOrgsHoldAnswersAsMissing(t *testing.T) {
	t.Parallel()
	e := start(t)
	a := e.account(t, "per_message", "")
	b := e.account(t, "per_message", "")
	e.grant(t, a, 50, false)
	e.grant(t, b, 50, false)
	hold := uuid.New()
	_, err := placeHold(e, a, hold, 20)
	require.NoError(t, err)
	missing := uuid.New()

	for name, call := range map[string]func(id uuid.UUID) error{
		"PostHold": func(id uuid.UUID) error {
			_, err := postHold(e, b, id, uuid.New(), 1)
			return err
		},
		"ReleaseHold": func(id uuid.UUID) error {
			_, err := releaseHold(e, b, id)
			return err
		},
	} {
		foreign, absent := call(hold), call(missing)
		assertReason(t, foreign, codes.NotFound, apierr.ReasonNotFound, name)
		assert.Equal(t, status.Convert(absent).Proto(), status.Convert(foreign).Proto(), "%s: identical answers", name)
	}

	// B may use the same hold id: it is B's own hold.
	mine, err := placeHold(e, b, hold, 5)
	require.NoError(t, err)
	assert.Equal(t, int32(45), mine.GetCredits().GetAvailable())
	assert.Equal(t, int32(30), e.credits(t, a).GetAvailable())
	posted, err := postHold(e, a, hold, uuid.New(), 20)
	require.NoError(t, err, "A's hold still has all 20")
	assert.Zero(t, posted.GetHold().GetRemaining())

	// A message id charged in A is a different message in B.
	msg := uuid.New()
	_, err = charge(e, a, msg, 3)
	require.NoError(t, err)
	res, err := charge(e, b, msg, 3)
	require.NoError(t, err)
	assert.Equal(t, int32(42), res.GetCredits().GetAvailable())
	e.assertLedgerSums(t, a)
	e.assertLedgerSums(t, b)
}

func TestTenantRPCsNeedAnOrganization(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	_, err := e.c.GetBillingStatus(ctx, &billingv1.GetBillingStatusRequest{})
	assert.Equal(t, codes.Unauthenticated, status.Code(err))
	_, err = e.c.Charge(ctx, &billingv1.ChargeRequest{MessageId: uuid.NewString(), Credits: 1})
	assert.Equal(t, codes.Unauthenticated, status.Code(err))
	_, err = e.c.PlaceHold(ctx, &billingv1.PlaceHoldRequest{HoldId: uuid.NewString(), Credits: 1})
	assert.Equal(t, codes.Unauthenticated, status.Code(err))
	_, err = e.c.SetAccount(ctx, &billingv1.SetAccountRequest{OrganizationId: uuid.NewString(), PricingModel: "per_message"})
	assert.NoError(t, err, "operator RPCs name the organization in the request")
}
