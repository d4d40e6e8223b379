package billing_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/chorus-sms/chorus/pkg/apierr"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

func charge(e *env, org, message uuid.UUID, credits int32) (*billingv1.ChargeResponse, error) {
	return e.c.Charge(as(org), &billingv1.ChargeRequest{MessageId: message.String(), Credits: credits})
}

func TestGrantAppliesOncePerKey(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	org := uuid.New()
	req := &billingv1.GrantCreditsRequest{OrganizationId: org.String(), Amount: 100, IdempotencyKey: "invoice-1"}
	for range 3 {
		res, err := e.c.GrantCredits(ctx, req)
		require.NoError(t, err)
		assert.Equal(t, int32(100), res.GetCredits().GetAvailable(), "a retried grant changes nothing")
	}
	assert.Equal(t, 1, e.ledgerRows(t, org, "grant"))
	st := getStatus(t, e, org)
	assert.Equal(t, "per_message", st.GetPricingModel(), "a grant opens a default account")

	_, err := e.c.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: org.String(), Amount: 50, IdempotencyKey: "invoice-1"})
	assertReason(t, err, codes.AlreadyExists, apierr.ReasonConflict, "the key was used for another amount")
	_, err = e.c.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: org.String(), Amount: 100, Included: true, IdempotencyKey: "invoice-1"})
	assertReason(t, err, codes.AlreadyExists, apierr.ReasonConflict, "the key was used for purchased credits")
	assert.Equal(t, int32(100), e.credits(t, org).GetAvailable())
	e.assertLedgerSums(t, org)
}

func TestGrantValidation(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	_, err := e.c.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: "x", Amount: 0})
	assert.ElementsMatch(t, []string{"organizationId", "amount", "idempotencyKey"}, badFields(t, err))
	_, err = e.c.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: uuid.NewString(), Amount: -5, IdempotencyKey: "k"})
	assert.Equal(t, []string{"amount"}, badFields(t, err))

	org := e.account(t, "per_message", "")
	_, err = e.c.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: org.String(), Amount: 5, Included: true, IdempotencyKey: "k"})
	assert.Equal(t, []string{"included"}, badFields(t, err), "only full_service accounts have included credits")
	assert.Zero(t, e.ledgerRows(t, org, "grant"))
}

func TestChargeDebitsOncePerMessage(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "per_message", "")
	e.grant(t, org, 10, false)
	msg := uuid.New()
	first, err := charge(e, org, msg, 3)
	require.NoError(t, err)
	assert.Equal(t, int32(3), first.GetCharged())
	assert.Equal(t, int32(7), first.GetCredits().GetAvailable())
	for range 3 {
		again, err := charge(e, org, msg, 3)
		require.NoError(t, err)
		assert.Equal(t, first.GetCharged(), again.GetCharged(), "a retry answers the same charge")
		assert.Equal(t, int32(7), again.GetCredits().GetAvailable(), "and debits nothing more")
	}
	assert.Equal(t, 1, e.ledgerRows(t, org, "debit"))

	_, err = charge(e, org, msg, 4)
	assertReason(t, err, codes.AlreadyExists, apierr.ReasonConflict, "the message was charged for another amount")
	assert.Equal(t, int32(7), e.credits(t, org).GetAvailable())
	e.assertLedgerSums(t, org)
}

// Retries of one message racing each other still debit it once.
func TestConcurrentRetriesOfOneMessageDebitOnce(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "per_message", "")
	e.grant(t, org, 100, false)
	msg := uuid.New()
	var wg sync.WaitGroup
	errs := make([]error, 20)
	charged := make([]int32, 20)
	for i := range errs {
		wg.Go(func() {
			res, err := charge(e, org, msg, 2)
			errs[i], charged[i] = err, res.GetCharged()
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err)
		assert.Equal(t, int32(2), charged[i])
	}
	assert.Equal(t, int32(98), e.credits(t, org).GetAvailable())
	assert.Equal(t, 1, e.ledgerRows(t, org, "debit"))
	e.assertLedgerSums(t, org)
}

func TestFullServiceSpendsIncludedCreditsFirst(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "full_service", "")
	e.grant(t, org, 5, true)
	e.grant(t, org, 10, false)

	res, err := charge(e, org, uuid.New(), 3)
	require.NoError(t, err)
	assert.Equal(t, int32(3), res.GetChargedIncluded())
	assert.Equal(t, []int32{10, 2, 12}, []int32{res.GetCredits().GetAvailable(), res.GetCredits().GetIncluded(), res.GetCredits().GetTotal()})

	res, err = charge(e, org, uuid.New(), 4)
	require.NoError(t, err)
	assert.Equal(t, int32(4), res.GetCharged())
	assert.Equal(t, int32(2), res.GetChargedIncluded(), "the last 2 included credits, then 2 purchased")
	assert.Equal(t, int32(8), res.GetCredits().GetAvailable())
	assert.Zero(t, res.GetCredits().GetIncluded())

	_, err = charge(e, org, uuid.New(), 9)
	assertReason(t, err, codes.FailedPrecondition, "INSUFFICIENT_CREDITS")
	e.assertLedgerSums(t, org)
}

// A per_message account never spends included credits, even ones left from a full_service plan.
func TestPerMessageSpendsOnlyPurchasedCredits(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "full_service", "")
	e.grant(t, org, 5, true)
	_, err := e.c.SetAccount(context.Background(), &billingv1.SetAccountRequest{OrganizationId: org.String(), PricingModel: "per_message"})
	require.NoError(t, err)
	_, err = charge(e, org, uuid.New(), 1)
	assertReason(t, err, codes.FailedPrecondition, "INSUFFICIENT_CREDITS")
	assert.Equal(t, int32(5), e.credits(t, org).GetIncluded())
}

func TestUnlimitedPlansAndFreeMessagesDebitNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	unlimited := e.account(t, "unlimited", "")
	e.grant(t, unlimited, 5, false)
	res, err := charge(e, unlimited, uuid.New(), 3)
	require.NoError(t, err)
	assert.Zero(t, res.GetCharged())
	assert.Equal(t, int32(5), res.GetCredits().GetAvailable())
	res, err = charge(e, unlimited, uuid.New(), 500)
	require.NoError(t, err, "an unlimited plan never runs out")
	assert.Zero(t, res.GetCharged())
	assert.Zero(t, e.ledgerRows(t, unlimited, "debit"))

	broke := e.account(t, "per_message", "")
	res, err = charge(e, broke, uuid.New(), 0)
	require.NoError(t, err, "a 0-credit message needs no credits")
	assert.Zero(t, res.GetCharged())
	assert.Zero(t, e.ledgerRows(t, broke, "debit"))
}

func TestSuspendedAccountsCannotSpend(t *testing.T) {
	t.Parallel()
	e := start(t)
	for _, st := range []string{"suspended", "archived"} {
		for _, pricing := range []string{"per_message", "unlimited"} {
			org := e.account(t, pricing, st)
			e.grant(t, org, 10, false)
			_, err := charge(e, org, uuid.New(), 1)
			assertReason(t, err, codes.FailedPrecondition, "BILLING_SUSPENDED", "%s %s", pricing, st)
			_, err = e.c.PlaceHold(as(org), &billingv1.PlaceHoldRequest{HoldId: uuid.NewString(), Credits: 1})
			assertReason(t, err, codes.FailedPrecondition, "BILLING_SUSPENDED", "%s %s", pricing, st)
			assert.Equal(t, int32(10), e.credits(t, org).GetAvailable())
			assert.Zero(t, e.ledgerRows(t, org, "debit"))
		}
	}
	for _, st := range []string{"past_due", "overage_warning"} {
		org := e.account(t, "per_message", st)
		e.grant(t, org, 1, false)
		_, err := charge(e, org, uuid.New(), 1)
		assert.NoError(t, err, "%s accounts can still send", st)
	}
}

func TestInsufficientCreditsChangeNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "per_message", "")
	e.grant(t, org, 2, false)
	msg := uuid.New()
	_, err := charge(e, org, msg, 3)
	assertReason(t, err, codes.FailedPrecondition, "INSUFFICIENT_CREDITS")
	assert.Equal(t, int32(2), e.credits(t, org).GetAvailable())
	assert.Zero(t, e.ledgerRows(t, org, "debit"))

	e.grant(t, org, 1, false)
	res, err := charge(e, org, msg, 3)
	require.NoError(t, err, "a refused message can be charged once the credits are there")
	assert.Zero(t, res.GetCredits().GetAvailable())

	_, err = charge(e, uuid.New(), uuid.New(), 1)
	assertReason(t, err, codes.FailedPrecondition, "INSUFFICIENT_CREDITS", "no account, no credits")
	e.assertLedgerSums(t, org)
}

// 50 concurrent 1-credit charges against 20 credits: exactly 20 pass, the balance ends at 0
// and never below, and the ledger explains it.
func TestConcurrentChargesNeverOverdraw(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "per_message", "")
	e.grant(t, org, 12, false)
	e.grant(t, org, 8, false)
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = charge(e, org, uuid.New(), 1)
		})
	}
	wg.Wait()
	assert.Equal(t, map[string]int{"": 20, "INSUFFICIENT_CREDITS": 30}, tally(errs))
	assert.Zero(t, e.credits(t, org).GetAvailable())
	assert.Equal(t, 20, e.ledgerRows(t, org, "debit"))
	var granted, debited int64
	require.NoError(t, e.db.QueryRow(context.Background(), `
		SELECT sum(amount) FILTER (WHERE kind = 'grant'), sum(amount) FILTER (WHERE kind = 'debit')
		FROM ledger WHERE organization_id = $1`, org).Scan(&granted, &debited))
	assert.Equal(t, int64(20), granted)
	assert.Equal(t, int64(20), debited)
	assert.Equal(t, granted-debited, int64(e.credits(t, org).GetAvailable()), "the balance is the grants minus the debits")
	e.assertLedgerSums(t, org)
}

func TestChargeValidation(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := uuid.New()
	_, err := e.c.Charge(as(org), &billingv1.ChargeRequest{MessageId: "m-1", Credits: -1})
	assert.ElementsMatch(t, []string{"messageId", "credits"}, badFields(t, err))
}

// Ledger rows are history: the database refuses to change or delete them.
func TestLedgerIsAppendOnly(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := uuid.New()
	e.grant(t, org, 5, false)
	_, err := e.db.Exec(context.Background(), `UPDATE ledger SET amount = 500 WHERE organization_id = $1`, org)
	assert.ErrorContains(t, err, "append-only")
	_, err = e.db.Exec(context.Background(), `DELETE FROM ledger WHERE organization_id = $1`, org)
	assert.ErrorContains(t, err, "append-only")
	_, err = e.db.Exec(context.Background(), `UPDATE accounts SET available = -1 WHERE organization_id = $1`, org)
	assert.ErrorContains(t, err, "accounts_available_check", "balances cannot go negative")
}
