package billing_test

import (
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

func refund(e *env, org, message uuid.UUID) (*billingv1.RefundDebitResponse, error) {
	return e.c.RefundDebit(as(org), &billingv1.RefundDebitRequest{MessageId: message.String()})
}

// A message the carrier failed gets its debit back exactly once, however often or
// concurrently the refund is asked for; a message never debited gets nothing.
func TestRefundGivesADebitBackOnce(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "full_service", "")
	e.grant(t, org, 10, false)
	e.grant(t, org, 2, true)

	charged := uuid.New()
	_, err := charge(e, org, charged, 3) // 2 included, 1 purchased
	require.NoError(t, err)
	hold := uuid.New()
	_, err = placeHold(e, org, hold, 4)
	require.NoError(t, err)
	posted := uuid.New()
	_, err = postHold(e, org, hold, posted, 4)
	require.NoError(t, err)
	_, err = e.c.ReleaseHold(as(org), &billingv1.ReleaseHoldRequest{HoldId: hold.String()})
	require.NoError(t, err)
	before := e.credits(t, org)
	require.Equal(t, int32(5), before.GetAvailable())
	require.Equal(t, int32(0), before.GetIncluded())

	var wg sync.WaitGroup
	results := make([]int32, 8)
	for i := range results {
		wg.Go(func() {
			res, err := refund(e, org, charged)
			assert.NoError(t, err)
			results[i] = res.GetRefunded()
		})
	}
	wg.Wait()
	for _, r := range results {
		assert.Equal(t, int32(3), r, "every answer names the one refund")
	}
	c := e.credits(t, org)
	assert.Equal(t, int32(6), c.GetAvailable(), "the purchased part goes back to purchased")
	assert.Equal(t, int32(2), c.GetIncluded(), "the included part goes back to included")

	res, err := refund(e, org, posted)
	require.NoError(t, err)
	assert.Equal(t, int32(4), res.GetRefunded())
	assert.Equal(t, int32(10), res.GetCredits().GetAvailable(), "a post against a released hold returns as purchased credits")

	res, err = refund(e, org, uuid.New())
	require.NoError(t, err)
	assert.Zero(t, res.GetRefunded(), "a message never debited refunds nothing")
	assert.Equal(t, int32(10), res.GetCredits().GetAvailable())
	assert.Equal(t, 2, e.ledgerRows(t, org, "refund"))
	e.assertLedgerSums(t, org)

	_, err = e.c.RefundDebit(as(org), &billingv1.RefundDebitRequest{MessageId: "nope"})
	assert.Equal(t, []string{"messageId"}, badFields(t, err))
	res, err = refund(e, uuid.New(), charged)
	require.NoError(t, err)
	assert.Zero(t, res.GetRefunded(), "another organization's message is not debited there")
}
