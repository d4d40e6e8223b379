package billing_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/service"

	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	"github.com/chorus-sms/chorus/services/billing"
	"github.com/chorus-sms/chorus/services/billing/internal/store"
)

// Periods in these tests end in 2099, so neither the service's own sweep (every minute, at
// the real time) nor SetPlan renews them: the test sweeps at the time it chooses.
func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// setPlan gives org a full_service plan of included credits per period ending at end.
func (e *env) setPlan(t *testing.T, org uuid.UUID, included int32, interval string, end time.Time) *billingv1.SetPlanResponse {
	t.Helper()
	res, err := e.c.SetPlan(context.Background(), &billingv1.SetPlanRequest{
		OrganizationId: org.String(), PricingModel: "full_service", IncludedPerPeriod: included,
		BillingInterval: interval, CurrentPeriodEnd: timestamppb.New(end),
	})
	require.NoError(t, err)
	return res
}

// sweep runs the renewal sweep as if it were now and returns how many periods it granted.
func (e *env) sweep(t *testing.T, now time.Time) int {
	t.Helper()
	n, err := store.New(e.db).RenewDue(context.Background(), now)
	require.NoError(t, err)
	return n
}

// periodEnd is the organization's current period end as its billing status shows it.
func (e *env) periodEnd(t *testing.T, org uuid.UUID) time.Time {
	t.Helper()
	return getStatus(t, e, org).GetSubscription().GetCurrentPeriodEnd().AsTime()
}

// subscribed gives a new organization a full_service account with a monthly subscription, so
// its status shows the period end, and a plan of included credits per period.
func (e *env) subscribed(t *testing.T, included int32, end time.Time) uuid.UUID {
	t.Helper()
	org := uuid.New()
	_, err := e.c.SetAccount(context.Background(), &billingv1.SetAccountRequest{
		OrganizationId: org.String(), PricingModel: "full_service",
		Subscription: &billingv1.Subscription{Id: "sub_1", PlanType: "pro", BillingInterval: "month", Status: "active", CurrentPeriodEnd: timestamppb.New(end)},
	})
	require.NoError(t, err)
	res, err := e.c.SetPlan(context.Background(), &billingv1.SetPlanRequest{
		OrganizationId: org.String(), PricingModel: "full_service", IncludedPerPeriod: included, BillingInterval: "month",
	})
	require.NoError(t, err)
	assert.Equal(t, end, res.GetPlan().GetCurrentPeriodEnd().AsTime(), "SetPlan keeps the subscription's period end")
	return org
}

func TestRenewalExpiresIncludedCreditsAndGrantsTheAllowance(t *testing.T) {
	t.Parallel()
	e := start(t)
	end := utc("2099-03-15T12:00:00Z")
	org := e.subscribed(t, 100, end)
	e.grant(t, org, 30, true)
	e.grant(t, org, 40, false)
	_, err := charge(e, org, uuid.New(), 25)
	require.NoError(t, err)
	require.Equal(t, int32(5), e.credits(t, org).GetIncluded())

	assert.Zero(t, e.sweep(t, end.Add(-time.Second)), "the period has not ended")
	assert.Equal(t, int32(5), e.credits(t, org).GetIncluded())

	assert.Equal(t, 1, e.sweep(t, end))
	c := e.credits(t, org)
	assert.Equal(t, int32(100), c.GetIncluded(), "the 5 left expired and the allowance was granted")
	assert.Equal(t, int32(40), c.GetAvailable(), "purchased credits do not expire")
	assert.Equal(t, int32(140), c.GetTotal())
	assert.Equal(t, utc("2099-04-15T12:00:00Z"), e.periodEnd(t, org))

	var kinds []string
	var amounts []int32
	rows, err := e.db.Query(context.Background(), `
		SELECT kind, amount FROM ledger WHERE organization_id = $1 AND kind IN ('renewal', 'expiry') ORDER BY kind`, org)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		var a int32
		require.NoError(t, rows.Scan(&k, &a))
		kinds, amounts = append(kinds, k), append(amounts, a)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"expiry", "renewal"}, kinds)
	assert.Equal(t, []int32{5, 100}, amounts)
	e.assertLedgerSums(t, org)

	res, err := charge(e, org, uuid.New(), 120)
	require.NoError(t, err, "the new period's credits are spendable")
	assert.Equal(t, int32(100), res.GetChargedIncluded())
	e.assertLedgerSums(t, org)
}

// Sweeps racing each other, and sweeping again, renew a period once; spending during them
// neither overdraws nor escapes the ledger.
func TestAPeriodRenewsOnce(t *testing.T) {
	t.Parallel()
	e := start(t)
	end := utc("2099-03-15T00:00:00Z")
	org := uuid.New()
	e.setPlan(t, org, 50, "month", end)
	e.grant(t, org, 20, true)
	e.grant(t, org, 100, false)

	var wg sync.WaitGroup
	granted := make([]int, 8)
	for i := range granted {
		wg.Go(func() {
			n, err := store.New(e.db).RenewDue(context.Background(), end.Add(time.Hour))
			assert.NoError(t, err)
			granted[i] = n
		})
	}
	charged := make([]int32, 10)
	for i := range charged {
		wg.Go(func() {
			res, err := charge(e, org, uuid.New(), 3)
			assert.NoError(t, err)
			charged[i] = res.GetCharged()
		})
	}
	wg.Wait()
	total := 0
	for _, n := range granted {
		total += n
	}
	assert.Equal(t, 1, total, "one sweep renewed the period, the others found it renewed")
	assert.Zero(t, e.sweep(t, end.Add(2*time.Hour)), "sweeping again renews nothing")
	assert.Equal(t, 1, e.ledgerRows(t, org, "renewal"))
	e.assertLedgerSums(t, org)
	c := e.credits(t, org)
	assert.Equal(t, int32(170-30), c.GetTotal()+int32(e.expired(t, org)), "every credit is spent, expired or left")
	assert.LessOrEqual(t, c.GetIncluded(), int32(50), "never more than the allowance")
}

// expired sums the organization's expired credits.
func (e *env) expired(t *testing.T, org uuid.UUID) int64 {
	t.Helper()
	var n int64
	require.NoError(t, e.db.QueryRow(context.Background(),
		`SELECT coalesce(sum(amount), 0) FROM ledger WHERE organization_id = $1 AND kind = 'expiry'`, org).Scan(&n))
	return n
}

// Only a full_service plan with included credits per period renews; included credits granted
// by hand to an account without one never expire.
func TestOnlyFullServicePlansRenew(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	past := utc("2026-01-01T00:00:00Z")
	sub := &billingv1.Subscription{Id: "sub_1", PlanType: "pro", BillingInterval: "month", Status: "active", CurrentPeriodEnd: timestamppb.New(past)}

	byHand := uuid.New() // full_service, no plan: a provider integration grants its periods
	_, err := e.c.SetAccount(ctx, &billingv1.SetAccountRequest{OrganizationId: byHand.String(), PricingModel: "full_service", Subscription: sub})
	require.NoError(t, err)
	e.grant(t, byHand, 30, true)

	ended := uuid.New() // had a plan, now per_message
	e.setPlan(t, ended, 50, "month", utc("2099-01-01T00:00:00Z"))
	e.grant(t, ended, 30, true)
	res, err := e.c.SetPlan(ctx, &billingv1.SetPlanRequest{OrganizationId: ended.String(), PricingModel: "per_message"})
	require.NoError(t, err)
	assert.Zero(t, res.GetPlan().GetIncludedPerPeriod())
	assert.Equal(t, "month", res.GetPlan().GetBillingInterval(), "the interval is kept")

	assert.Zero(t, e.sweep(t, utc("2099-06-01T00:00:00Z")))
	for _, org := range []uuid.UUID{byHand, ended} {
		assert.Equal(t, int32(30), e.credits(t, org).GetIncluded())
		assert.Zero(t, e.ledgerRows(t, org, "renewal"))
		assert.Zero(t, e.ledgerRows(t, org, "expiry"))
	}
	assert.Equal(t, past, e.periodEnd(t, byHand), "a period nobody renews stays as it was set")
}

// A suspended account's period waits; reactivated, it renews at once into the current period,
// granting the allowance once, not once per period missed.
func TestASuspendedAccountRenewsWhenReactivated(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	org := e.subscribed(t, 100, utc("2099-01-10T00:00:00Z"))
	e.grant(t, org, 7, true)
	suspend := func(st string) {
		_, err := e.c.SetAccount(ctx, &billingv1.SetAccountRequest{OrganizationId: org.String(), PricingModel: "full_service", BillingStatus: st})
		require.NoError(t, err, "without a subscription, SetAccount keeps the plan's period")
	}
	suspend("suspended")
	assert.Zero(t, e.sweep(t, utc("2099-04-20T00:00:00Z")))
	assert.Equal(t, int32(7), e.credits(t, org).GetIncluded())

	suspend("active")
	assert.Equal(t, 1, e.sweep(t, utc("2099-04-20T00:00:00Z")))
	assert.Equal(t, int32(100), e.credits(t, org).GetIncluded())
	var end time.Time
	require.NoError(t, e.db.QueryRow(ctx, `SELECT current_period_end FROM accounts WHERE organization_id = $1`, org).Scan(&end))
	assert.Equal(t, utc("2099-05-10T00:00:00Z"), end.UTC(), "the current period, still counted from the 10th")
	assert.Equal(t, 1, e.ledgerRows(t, org, "renewal"))
	e.assertLedgerSums(t, org)
}

// Periods are counted from the first period end, so a plan ending on the 31st ends on the last
// day of shorter months and on the 31st again after them; a yearly plan anchored on Feb 29
// ends Feb 28 in common years.
func TestPeriodEndsAdvanceByTheInterval(t *testing.T) {
	t.Parallel()
	e := start(t)
	monthly := uuid.New()
	e.setPlan(t, monthly, 10, "month", utc("2099-01-31T09:00:00Z"))
	var got []time.Time
	end := func(org uuid.UUID) time.Time {
		var t0 time.Time
		require.NoError(t, e.db.QueryRow(context.Background(), `SELECT current_period_end FROM accounts WHERE organization_id = $1`, org).Scan(&t0))
		return t0.UTC()
	}
	for range 4 {
		e.sweep(t, end(monthly))
		got = append(got, end(monthly))
	}
	assert.Equal(t, []time.Time{
		utc("2099-02-28T09:00:00Z"), utc("2099-03-31T09:00:00Z"), utc("2099-04-30T09:00:00Z"), utc("2099-05-31T09:00:00Z"),
	}, got)

	yearly := uuid.New()
	e.setPlan(t, yearly, 10, "year", utc("2096-02-29T00:00:00Z"))
	e.sweep(t, utc("2096-02-29T00:00:00Z"))
	assert.Equal(t, utc("2097-02-28T00:00:00Z"), end(yearly))
	e.sweep(t, utc("2103-06-01T00:00:00Z"))
	assert.Equal(t, utc("2104-02-29T00:00:00Z"), end(yearly))
	assert.Equal(t, 2, e.ledgerRows(t, yearly, "renewal"), "years missed: one renewal into the current period")
	assert.Equal(t, int32(10), e.credits(t, yearly).GetIncluded())
}

// Included credits held across a renewal belong to the period that ended: posts may still
// spend them (the send was reserved then), but a release after the renewal expires what is
// left instead of adding it to the new period's allowance. Purchased credits go back as
// always, and a hold placed in the new period returns its included credits as usual.
func TestReleasingAHoldAfterARenewalExpiresItsIncludedCredits(t *testing.T) {
	t.Parallel()
	e := start(t)
	end := utc("2099-03-01T00:00:00Z")
	org := uuid.New()
	e.setPlan(t, org, 100, "month", end)
	e.grant(t, org, 20, true)
	e.grant(t, org, 50, false)
	old := uuid.New()
	placed, err := placeHold(e, org, old, 30)
	require.NoError(t, err)
	assert.Zero(t, placed.GetCredits().GetIncluded(), "20 included and 10 purchased held")
	_, err = postHold(e, org, old, uuid.New(), 3)
	require.NoError(t, err)

	require.Equal(t, 1, e.sweep(t, end))
	require.Equal(t, int32(100), e.credits(t, org).GetIncluded())
	posted, err := postHold(e, org, old, uuid.New(), 2)
	require.NoError(t, err, "the hold keeps what it reserved")
	assert.Equal(t, int32(25), posted.GetHold().GetRemaining())
	assert.Equal(t, int32(100), e.credits(t, org).GetIncluded(), "posts spend the hold, not the new period")

	fresh := uuid.New()
	_, err = placeHold(e, org, fresh, 40)
	require.NoError(t, err)

	released, err := releaseHold(e, org, old)
	require.NoError(t, err)
	assert.Equal(t, int32(10), released.GetReturned(), "only the 10 purchased credits come back")
	assert.Equal(t, int32(60), released.GetCredits().GetIncluded(), "the 15 old included credits expired")
	assert.Equal(t, int32(50), released.GetCredits().GetAvailable())
	again, err := releaseHold(e, org, old)
	require.NoError(t, err)
	assert.Equal(t, int32(10), again.GetReturned(), "a repeat answers the first release")

	released, err = releaseHold(e, org, fresh)
	require.NoError(t, err)
	assert.Equal(t, int32(40), released.GetReturned())
	assert.Equal(t, int32(100), released.GetCredits().GetIncluded(), "a hold of this period returns its included credits")
	assert.Equal(t, int64(15), e.expired(t, org), "none at the renewal (the included balance was all held), 15 at the release")
	e.assertLedgerSums(t, org)
}

// A period end set back to one already renewed (a stale subscription, say) is moved forward
// again without granting the period twice.
func TestAPeriodEndSetBackDoesNotGrantAgain(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	end := utc("2099-03-10T00:00:00Z")
	org := e.subscribed(t, 100, end)
	require.Equal(t, 1, e.sweep(t, end))
	_, err := charge(e, org, uuid.New(), 30)
	require.NoError(t, err)

	_, err = e.c.SetAccount(ctx, &billingv1.SetAccountRequest{
		OrganizationId: org.String(), PricingModel: "full_service",
		Subscription: &billingv1.Subscription{Id: "sub_1", PlanType: "pro", BillingInterval: "month", Status: "active", CurrentPeriodEnd: timestamppb.New(end)},
	})
	require.NoError(t, err)
	assert.Zero(t, e.sweep(t, end.Add(24*time.Hour)))
	assert.Equal(t, int32(70), e.credits(t, org).GetIncluded(), "the period was granted already")
	assert.Equal(t, utc("2099-04-10T00:00:00Z"), e.periodEnd(t, org))
	e.assertLedgerSums(t, org)
}

// The running service sweeps on its own: a period that ended is renewed without anyone asking.
func TestTheServiceRenewsPeriodsAsTheyEnd(t *testing.T) {
	t.Parallel()
	e := startConfig(t, billing.Config{RenewalInterval: 50 * time.Millisecond})
	org := uuid.New()
	e.setPlan(t, org, 100, "month", utc("2099-01-01T00:00:00Z"))
	// Time passes: the period ended a moment ago.
	var end time.Time
	require.NoError(t, e.db.QueryRow(context.Background(), `
		UPDATE accounts SET current_period_end = date_trunc('second', now()) - interval '1 second'
		WHERE organization_id = $1 RETURNING current_period_end`, org).Scan(&end))
	assert.Eventually(t, func() bool { return e.credits(t, org).GetIncluded() == 100 }, 5*time.Second, 20*time.Millisecond)
	var next time.Time
	require.NoError(t, e.db.QueryRow(context.Background(), `SELECT current_period_end FROM accounts WHERE organization_id = $1`, org).Scan(&next))
	assert.WithinRange(t, next, end.AddDate(0, 0, 28), end.AddDate(0, 0, 31), "the next period ends a month later")
}

// SetPlan without a period end starts the first period at once, and later keeps the period.
func TestSetPlanStartsTheFirstPeriod(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	org := uuid.New()
	before := time.Now()
	res, err := e.c.SetPlan(ctx, &billingv1.SetPlanRequest{
		OrganizationId: org.String(), PricingModel: "full_service", IncludedPerPeriod: 500, BillingInterval: "month",
	})
	require.NoError(t, err)
	assert.Equal(t, int32(500), res.GetCredits().GetIncluded())
	end := res.GetPlan().GetCurrentPeriodEnd().AsTime()
	assert.True(t, end.After(before.AddDate(0, 0, 27)) && end.Before(before.AddDate(0, 0, 32)), "a month from now: %s", end)
	assert.Equal(t, "full_service", getStatus(t, e, org).GetPricingModel())

	_, err = charge(e, org, uuid.New(), 100)
	require.NoError(t, err)
	res, err = e.c.SetPlan(ctx, &billingv1.SetPlanRequest{
		OrganizationId: org.String(), PricingModel: "full_service", IncludedPerPeriod: 800, BillingInterval: "month",
	})
	require.NoError(t, err)
	assert.Equal(t, int32(800), res.GetPlan().GetIncludedPerPeriod())
	assert.Equal(t, end, res.GetPlan().GetCurrentPeriodEnd().AsTime(), "the period goes on")
	assert.Equal(t, int32(400), res.GetCredits().GetIncluded(), "the new allowance starts with the next period")
	assert.Equal(t, 1, e.ledgerRows(t, org, "renewal"))
	e.assertLedgerSums(t, org)
}

func TestSetPlanValidation(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	_, err := e.c.SetPlan(ctx, &billingv1.SetPlanRequest{OrganizationId: "x", PricingModel: "full_service", BillingInterval: "week"})
	assert.ElementsMatch(t, []string{"organizationId", "includedPerPeriod", "billingInterval"}, badFields(t, err))
	_, err = e.c.SetPlan(ctx, &billingv1.SetPlanRequest{OrganizationId: uuid.NewString(), PricingModel: "full_service", IncludedPerPeriod: 5})
	assert.Equal(t, []string{"billingInterval"}, badFields(t, err), "a full_service plan needs an interval")
	_, err = e.c.SetPlan(ctx, &billingv1.SetPlanRequest{OrganizationId: uuid.NewString(), PricingModel: "per_message", IncludedPerPeriod: 5})
	assert.Equal(t, []string{"includedPerPeriod"}, badFields(t, err), "only full_service plans include credits")
	_, err = e.c.SetPlan(ctx, &billingv1.SetPlanRequest{OrganizationId: uuid.NewString()})
	assert.Equal(t, []string{"pricingModel"}, badFields(t, err))
	_, err = e.c.SetPlan(ctx, &billingv1.SetPlanRequest{
		OrganizationId: uuid.NewString(), PricingModel: "full_service", IncludedPerPeriod: 5, BillingInterval: "year",
		CurrentPeriodEnd: &timestamppb.Timestamp{Seconds: -1 << 62},
	})
	assert.Equal(t, []string{"currentPeriodEnd"}, badFields(t, err))

	// A subscription cannot leave a plan without a period that can end.
	org := uuid.New()
	e.setPlan(t, org, 10, "month", utc("2099-01-01T00:00:00Z"))
	_, err = e.c.SetAccount(ctx, &billingv1.SetAccountRequest{
		OrganizationId: org.String(), PricingModel: "full_service",
		Subscription: &billingv1.Subscription{Id: "s", PlanType: "p", BillingInterval: "monthly", Status: "active", CurrentPeriodEnd: timestamppb.Now()},
	})
	assert.Equal(t, []string{"subscription.billingInterval"}, badFields(t, err))
	_, err = e.c.SetAccount(ctx, &billingv1.SetAccountRequest{
		OrganizationId: org.String(), PricingModel: "full_service",
		Subscription: &billingv1.Subscription{Id: "s", PlanType: "p", BillingInterval: "month", Status: "active"},
	})
	assert.Equal(t, []string{"subscription.currentPeriodEnd"}, badFields(t, err))
}

// A period that ended while the service was down is renewed as soon as it starts again, not
// a renewal interval later.
func TestAStartRenewsPeriodsThatEndedWhileDown(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	cfg := billing.Config{Storage: service.Storage{DatabaseURL: dsn}, RenewalInterval: time.Hour, Wiring: process.Wiring{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}

	// The first run sets the plan, then stops.
	first, err := billing.New(ctx, cfg)
	require.NoError(t, err)
	serveCtx, stop := context.WithCancel(ctx)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- first.Serve(serveCtx, lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	org := uuid.New()
	(&env{c: billingv1.NewBillingServiceClient(conn)}).setPlan(t, org, 100, "month", utc("2099-01-01T00:00:00Z"))
	require.NoError(t, conn.Close())
	stop()
	require.NoError(t, <-served)
	first.Close()

	// The period ends while no replica runs; the next start renews it within seconds.
	db, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `UPDATE billing.accounts SET current_period_end = now() - interval '1 second' WHERE organization_id = $1`, org)
	require.NoError(t, err)
	require.NoError(t, db.Close(ctx))
	e := startConfig(t, cfg)
	// The new process sweeps once River elects it leader: at once when the old one resigned,
	// else when the old leadership lapses (River's TTL, tens of seconds), never an hour later.
	assert.Eventually(t, func() bool { return e.credits(t, org).GetIncluded() == 100 }, 45*time.Second, 50*time.Millisecond)
}

// Billing runs its renewal sweeps on River, in its own schema.
func TestBillingSchemaHoldsRiverTables(t *testing.T) {
	e := start(t)
	var riverJob *string
	require.NoError(t, e.db.QueryRow(context.Background(), `SELECT to_regclass('billing.river_job')::text`).Scan(&riverJob))
	assert.NotNil(t, riverJob)
}
