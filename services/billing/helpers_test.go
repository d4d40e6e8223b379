package billing_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/service"
	"github.com/chorus-sms/chorus/pkg/tenant"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	"github.com/chorus-sms/chorus/services/billing"
)

// env is a billing service on a 127.0.0.1 listener over its own database, and a pool on that
// database for what the API does not show (ledger rows) and for sweeping renewals at a chosen
// time.
type env struct {
	c  billingv1.BillingServiceClient
	db *pgxpool.Pool
}

func start(t *testing.T) *env {
	t.Helper()
	return startConfig(t, billing.Config{})
}

func TestMain(m *testing.M) {
	pgtest.Main(m)
}

// migrated is the schema every test's database starts with, migrated by the service itself.
var migrated = pgtest.NewTemplate("billing", func(ctx context.Context, dsn string) error {
	svc, err := billing.New(ctx, billing.Config{Storage: service.Storage{DatabaseURL: dsn}, Wiring: process.Wiring{Logger: quietLogger()}})
	if err != nil {
		return err
	}
	svc.Close()
	return nil
})

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startConfig starts the service with cfg, on its own database unless cfg names one.
func startConfig(t *testing.T, cfg billing.Config) *env {
	t.Helper()
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = migrated.NewDatabase(t)
	}
	dsn := cfg.DatabaseURL
	cfg.Logger = quietLogger()
	svc, err := billing.New(context.Background(), cfg)
	require.NoError(t, err)
	conn := servetest.Serve(t, svc)
	dbCfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	dbCfg.ConnConfig.RuntimeParams["search_path"] = billing.Schema
	db, err := pgxpool.NewWithConfig(context.Background(), dbCfg)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return &env{c: billingv1.NewBillingServiceClient(conn), db: db}
}

// as returns a context calling for org, as another service forwarding its caller does.
func as(org uuid.UUID) context.Context {
	return tenant.AppendToOutgoing(context.Background(), tenant.Principal{OrgID: org, User: "user-" + org.String()[:8], Access: tenant.AccessWrite})
}

// account gives a new organization an account with the pricing model and billing status.
func (e *env) account(t *testing.T, pricing, billingStatus string) uuid.UUID {
	t.Helper()
	org := uuid.New()
	_, err := e.c.SetAccount(context.Background(), &billingv1.SetAccountRequest{
		OrganizationId: org.String(), PricingModel: pricing, BillingStatus: billingStatus,
	})
	require.NoError(t, err)
	return org
}

// grant adds credits under a fresh idempotency key and returns the balance after.
func (e *env) grant(t *testing.T, org uuid.UUID, amount int32, included bool) *billingv1.Credits {
	t.Helper()
	res, err := e.c.GrantCredits(context.Background(), &billingv1.GrantCreditsRequest{
		OrganizationId: org.String(), Amount: amount, Included: included, IdempotencyKey: uuid.NewString(),
	})
	require.NoError(t, err)
	return res.GetCredits()
}

// credits returns the organization's balances as the billing status reports them.
func (e *env) credits(t *testing.T, org uuid.UUID) *billingv1.Credits {
	t.Helper()
	res, err := e.c.GetBillingStatus(as(org), &billingv1.GetBillingStatusRequest{})
	require.NoError(t, err)
	return res.GetStatus().GetCredits()
}

// ledgerRows counts the organization's ledger rows of a kind.
func (e *env) ledgerRows(t *testing.T, org uuid.UUID, kind string) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.QueryRow(context.Background(),
		`SELECT count(*) FROM ledger WHERE organization_id = $1 AND kind = $2`, org, kind).Scan(&n))
	return n
}

// assertLedgerSums checks the ledger explains the balances: its deltas add up to the available
// and included balances and to what the holds have left.
func (e *env) assertLedgerSums(t *testing.T, org uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	var sumAvailable, sumIncluded, sumHeld, available, included, held int64
	require.NoError(t, e.db.QueryRow(ctx, `
		SELECT coalesce(sum(available_delta), 0), coalesce(sum(included_delta), 0), coalesce(sum(held_delta), 0)
		FROM ledger WHERE organization_id = $1`, org).Scan(&sumAvailable, &sumIncluded, &sumHeld))
	require.NoError(t, e.db.QueryRow(ctx, `
		SELECT coalesce(sum(available), 0), coalesce(sum(included), 0) FROM accounts WHERE organization_id = $1`,
		org).Scan(&available, &included))
	require.NoError(t, e.db.QueryRow(ctx, `
		SELECT coalesce(sum(included_remaining + available_remaining), 0) FROM holds WHERE organization_id = $1`,
		org).Scan(&held))
	assert.Equal(t, available, sumAvailable, "available balance = sum of the ledger's available deltas")
	assert.Equal(t, included, sumIncluded, "included balance = sum of the ledger's included deltas")
	assert.Equal(t, held, sumHeld, "credits left on holds = sum of the ledger's held deltas")
}

// assertReason asserts err is a gRPC error with the code and ErrorInfo reason.
func assertReason(t *testing.T, err error, code codes.Code, reason string, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	assert.Equal(t, code, status.Code(err), msgAndArgs...)
	assert.Equal(t, reason, apierr.Reason(err), msgAndArgs...)
}

// badFields asserts err is a VALIDATION_FAILED error and returns the fields it names.
func badFields(t *testing.T, err error) []string {
	t.Helper()
	assertReason(t, err, codes.InvalidArgument, apierr.ReasonValidation)
	var fields []string
	for f := range apierr.FieldViolations(err) {
		fields = append(fields, f)
	}
	return fields
}

// tally counts outcomes of concurrent calls by reason ("" for success).
func tally(errs []error) map[string]int {
	out := map[string]int{}
	for _, err := range errs {
		out[apierr.Reason(err)]++
	}
	return out
}
