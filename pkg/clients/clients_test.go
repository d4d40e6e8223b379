package clients_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/clients/billing"
	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/tenant"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// peer is a real gRPC server on loopback that answers every call with the errors queued in
// fail (one per call, until none are left) and records the principal of each call.
type peer struct {
	contactsv1.UnimplementedContactsServiceServer
	billingv1.UnimplementedBillingServiceServer
	orgsv1.UnimplementedOrgsServiceServer

	mu    sync.Mutex
	fail  []error
	calls []tenant.Principal
}

func (p *peer) answer(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, _ := tenant.FromIncoming(ctx)
	p.calls = append(p.calls, pr)
	if len(p.fail) == 0 {
		return nil
	}
	err := p.fail[0]
	p.fail = p.fail[1:]
	return err
}

func (p *peer) failWith(errs ...error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail, p.calls = errs, nil
}

func (p *peer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

func (p *peer) CheckSendable(ctx context.Context, req *contactsv1.CheckSendableRequest) (*contactsv1.CheckSendableResponse, error) {
	if err := p.answer(ctx); err != nil {
		return nil, err
	}
	return &contactsv1.CheckSendableResponse{Results: []*contactsv1.Sendability{{Phone: req.GetPhones()[0], Sendable: true}}}, nil
}

func (p *peer) RecordInbound(ctx context.Context, _ *contactsv1.RecordInboundRequest) (*contactsv1.RecordInboundResponse, error) {
	return &contactsv1.RecordInboundResponse{Found: true}, p.answer(ctx)
}

func (p *peer) PostHold(ctx context.Context, _ *billingv1.PostHoldRequest) (*billingv1.PostHoldResponse, error) {
	return &billingv1.PostHoldResponse{}, p.answer(ctx)
}

func (p *peer) GetOrganization(ctx context.Context, req *orgsv1.GetOrganizationRequest) (*orgsv1.GetOrganizationResponse, error) {
	if err := p.answer(ctx); err != nil {
		return nil, err
	}
	return &orgsv1.GetOrganizationResponse{Organization: &orgsv1.Organization{Id: req.GetId(), Timezone: "America/Chicago"}}, nil
}

// start serves p on 127.0.0.1 and returns a connection to it made for the "campaigns" service.
func start(t *testing.T, p *peer) *clients.Conn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(tenant.UnaryServerInterceptor(orgsv1.OrgsService_GetOrganization_FullMethodName)))
	contactsv1.RegisterContactsServiceServer(srv, p)
	billingv1.RegisterBillingServiceServer(srv, p)
	orgsv1.RegisterOrgsServiceServer(srv, p)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := clients.Dial("peer", lis.Addr().String(), "campaigns")
	require.NoError(t, err)
	conn.Backoff = time.Millisecond
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

var unavailable = status.Error(codes.Unavailable, "connection refused by 10.0.0.7:9002")

func TestIdempotentCallsRetryOnlyWhileThePeerIsUnavailable(t *testing.T) {
	p := &peer{}
	conn := start(t, p)
	c, b := contacts.New(conn), billing.New(conn)
	org := uuid.New()
	ctx := context.Background()

	p.failWith(unavailable, unavailable)
	res, err := c.CheckSendable(ctx, org, []string{"+15125550100"})
	require.NoError(t, err, "a read succeeds on the third try")
	assert.True(t, res[0].GetSendable())
	assert.Equal(t, 3, p.count())

	p.failWith(unavailable, unavailable, unavailable, unavailable)
	err = b.PostHold(ctx, org, "hold-1", uuid.New(), 2)
	assert.ErrorIs(t, err, apierr.ErrUnavailable, "a keyed write gives up after the bound")
	assert.Equal(t, clients.DefaultAttempts, p.count())

	p.failWith(unavailable)
	_, err = c.RecordInbound(ctx, org, "+15125550100")
	assert.ErrorIs(t, err, apierr.ErrUnavailable)
	assert.Equal(t, 1, p.count(), "a write without an idempotency key is never repeated")

	p.failWith(apierr.Field("phones", "must hold 1 to 1000 phones"))
	_, err = c.CheckSendable(ctx, org, []string{"+15125550100"})
	assert.ErrorIs(t, err, clients.ErrInvalid)
	assert.Equal(t, 1, p.count(), "a refusal is not retried")
}

// A caller that gives up while its peer is down is told so: it is not a peer outage to report.
func TestACallerThatGivesUpDuringRetriesGetsItsOwnCancellation(t *testing.T) {
	p := &peer{}
	conn := start(t, p)
	conn.Backoff = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	p.failWith(unavailable, unavailable)
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := contacts.New(conn).CheckSendable(ctx, uuid.New(), []string{"+15125550100"})
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, apierr.ErrUnavailable)
}

func TestPeerErrorsAreTranslatedByCode(t *testing.T) {
	p := &peer{}
	c := contacts.New(start(t, p))
	cases := []struct {
		answer error
		is     error
	}{
		{apierr.NotFound("contact 42 not found"), clients.ErrNotFound},
		{apierr.Field("phones", "must hold 1 to 1000 phones"), clients.ErrInvalid},
		{apierr.New(codes.FailedPrecondition, apierr.ReasonInsufficientCredits, "not enough credits"), clients.ErrRefused},
		{apierr.Conflict("taken"), clients.ErrConflict},
		{apierr.New(codes.PermissionDenied, apierr.ReasonForbidden, "write access required"), clients.ErrForbidden},
		{apierr.New(codes.Unauthenticated, apierr.ReasonUnauthenticated, "no organization"), clients.ErrUnauthorized},
		{status.Error(codes.DeadlineExceeded, "slow"), context.DeadlineExceeded},
		{status.Error(codes.Canceled, "gone"), context.Canceled},
		{unavailable, apierr.ErrUnavailable},
	}
	for _, tc := range cases {
		t.Run(status.Code(tc.answer).String(), func(t *testing.T) {
			p.failWith(tc.answer, tc.answer, tc.answer)
			_, err := c.CheckSendable(context.Background(), uuid.New(), []string{"+15125550100"})
			assert.ErrorIs(t, err, tc.is)
			var pe *clients.Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, status.Code(tc.answer), pe.Code)
			assert.Equal(t, "CheckSendable", pe.Method)
			assert.Equal(t, apierr.Reason(tc.answer), clients.Reason(fmt.Errorf("wrapped: %w", err)))
			assert.Equal(t, apierr.FieldViolations(tc.answer), pe.Fields)
			// What a server returns after wrapping the translated error: the boundary masks it.
			_, served := apierr.UnaryServerInterceptor(discard)(context.Background(), nil, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) {
				return nil, fmt.Errorf("check sendable: %w", err)
			})
			assert.NotContains(t, status.Convert(served).Message(), status.Convert(tc.answer).Message())
			assert.NotContains(t, status.Convert(served).Message(), "rpc error")
		})
	}
}

// A peer's payment refusal becomes the caller's own 402 error (forwarded by the boundary with
// its reason); every other error is left to the caller.
func TestPaymentRefusalsAreTranslated(t *testing.T) {
	p := &peer{}
	c := contacts.New(start(t, p))
	for _, reason := range []string{apierr.ReasonBillingSuspended, apierr.ReasonInsufficientCredits} {
		p.failWith(apierr.New(codes.FailedPrecondition, reason, "peer words"))
		_, err := c.CheckSendable(context.Background(), uuid.New(), []string{"+15125550100"})
		own := clients.Payment(fmt.Errorf("queue: %w", err))
		require.Error(t, own, reason)
		_, served := apierr.UnaryServerInterceptor(discard)(context.Background(), nil, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) {
			return nil, own
		})
		assert.Equal(t, codes.FailedPrecondition, status.Code(served))
		assert.Equal(t, reason, apierr.Reason(served))
		assert.NotContains(t, status.Convert(served).Message(), "peer words")
	}
	p.failWith(apierr.NotFound("no such number"))
	_, err := c.CheckSendable(context.Background(), uuid.New(), []string{"+15125550100"})
	assert.NoError(t, clients.Payment(err))
	assert.NoError(t, clients.Payment(nil))
}

func TestCallsActAsTheServiceForOneOrgAndKeepTheRequestID(t *testing.T) {
	p := &peer{}
	c := contacts.New(start(t, p))
	org := uuid.New()
	ctx := tenant.WithPrincipal(context.Background(), tenant.Principal{OrgID: uuid.New(), User: "alice", Access: tenant.AccessRead, RequestID: "req-7"})
	_, err := c.CheckSendable(ctx, org, []string{"+15125550100"})
	require.NoError(t, err)
	assert.Equal(t, []tenant.Principal{{OrgID: org, User: "service:campaigns", Access: tenant.AccessWrite, RequestID: "req-7"}}, p.calls)
}

func TestEachAttemptHasADeadline(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	contactsv1.RegisterContactsServiceServer(srv, stall{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := clients.Dial("contacts", lis.Addr().String(), "campaigns")
	require.NoError(t, err)
	conn.Timeout = 50 * time.Millisecond
	t.Cleanup(func() { _ = conn.Close() })
	_, err = contacts.New(conn).RecordInbound(context.Background(), uuid.New(), "+15125550100")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

type stall struct {
	contactsv1.UnimplementedContactsServiceServer
}

func (stall) RecordInbound(ctx context.Context, _ *contactsv1.RecordInboundRequest) (*contactsv1.RecordInboundResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestOrganizationsAreCachedForTheTTL(t *testing.T) {
	p := &peer{}
	o := orgs.New(start(t, p))
	o.TTL = 200 * time.Millisecond
	id := uuid.New()
	for range 3 {
		org, err := o.Organization(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, "America/Chicago", org.GetTimezone())
	}
	assert.Equal(t, 1, p.count(), "served from the cache")
	time.Sleep(250 * time.Millisecond)
	_, err := o.Organization(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, 2, p.count(), "asked again once stale")

	p.failWith(apierr.NotFound("organization not found"))
	_, err = o.Organization(context.Background(), uuid.New())
	assert.True(t, errors.Is(err, clients.ErrNotFound))
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))
