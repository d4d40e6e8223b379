// Package clients is what every typed peer client (pkg/clients/<service>) shares: dialing (the
// one way a process reaches its peers: dial.go), the caller a service acts as, a deadline per
// call, retries for idempotent calls, and the translation of a peer's status into an *Error
// that never carries the peer's text onward. Services import the typed clients, never the
// generated stubs of a peer, so none keeps its own copy of this plumbing.
package clients

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
)

// Defaults of a Conn: a peer answers within seconds or is treated as down; an idempotent call
// is tried three times, 50 ms then 100 ms apart, while the peer is unavailable.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultAttempts = 3
	DefaultBackoff  = 50 * time.Millisecond
)

// Conn is a connection to one peer service, made on behalf of one calling service.
type Conn struct {
	peer   string
	caller string
	cc     *grpc.ClientConn
	// Timeout bounds each attempt of a call.
	Timeout time.Duration
	// Attempts bounds the tries of an idempotent call (1 disables retries); Backoff is the
	// wait before the second, doubling after each.
	Attempts int
	Backoff  time.Duration
}

// ClientConn is the underlying connection, for a generated stub the caller registers as a
// whole (the gateway's REST routes) and health checks; nil for a nil Conn (a backend that is
// not configured).
func (c *Conn) ClientConn() *grpc.ClientConn {
	if c == nil {
		return nil
	}
	return c.cc
}

// Peer is the name of the service at the other end.
func (c *Conn) Peer() string { return c.peer }

// Close closes the connection.
func (c *Conn) Close() error { return c.cc.Close() }

// For returns ctx carrying the calling service as a writer of org, keeping the request id of
// the call being served, if any.
func (c *Conn) For(ctx context.Context, org uuid.UUID) context.Context {
	reqID := ""
	if p, ok := tenant.FromContext(ctx); ok {
		reqID = p.RequestID
	}
	return tenant.AppendToOutgoing(ctx, tenant.Principal{OrgID: org, User: "service:" + c.caller, Access: tenant.AccessWrite, RequestID: reqID})
}

// Retry says whether a call may be repeated: reads, and writes keyed so a repeat changes
// nothing (an idempotency key).
type Retry bool

// Retry modes of Call.
const (
	Once       Retry = false
	Idempotent Retry = true
)

// Call runs one call of method under the per-attempt deadline, retries an idempotent one
// while the peer is unavailable, and translates its failure into an *Error.
func Call[Resp any](ctx context.Context, c *Conn, method string, retry Retry, call func(context.Context) (Resp, error)) (Resp, error) {
	attempts := 1
	if retry == Idempotent {
		attempts = max(1, c.Attempts)
	}
	wait := c.Backoff
	var resp Resp
	var err error
	for i := 0; ; i++ {
		resp, err = attempt(ctx, c.Timeout, call)
		if err == nil || i+1 >= attempts || !transient(err) {
			break
		}
		select {
		case <-ctx.Done():
			// The caller gave up while the peer was down: that is what to report, not an outage.
			return resp, fmt.Errorf("%s %s: %w", c.peer, method, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
	return resp, c.translate(method, err)
}

// Stream runs a streaming call of method to its end and translates its failure as Call does.
// It is neither retried nor bounded by the per-attempt timeout: a stream lasts as long as its
// content (ctx bounds it), and a caller that stored what it received resumes after it.
func Stream(ctx context.Context, c *Conn, method string, run func(context.Context) error) error {
	return c.translate(method, run(ctx))
}

func attempt[Resp any](ctx context.Context, timeout time.Duration, call func(context.Context) (Resp, error)) (Resp, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return call(ctx)
}

// transient reports whether a failure means the peer did not act and may on a second try.
func transient(err error) bool { return status.Code(err) == codes.Unavailable }

// Error is a peer's failed answer: its code, reason and field names, which the caller tests
// (errors.Is with the sentinels below, errors.As, Reason) and then says what its own client
// sees in its own words. It is not an *apierr.Error, so the apierr interceptor never forwards
// it; its text, for logs, includes the peer's message.
type Error struct {
	Peer   string
	Method string
	Code   codes.Code
	Reason string
	Fields map[string]string
	st     *status.Status
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s %s: %s", e.Peer, e.Method, e.Code)
	if e.Reason != "" {
		s += " " + e.Reason
	}
	return s + ": " + e.st.Message()
}

// Sentinels an *Error matches by its code.
var (
	ErrNotFound     = errors.New("peer: not found")
	ErrInvalid      = errors.New("peer: invalid argument")
	ErrRefused      = errors.New("peer: failed precondition")
	ErrConflict     = errors.New("peer: conflict")
	ErrForbidden    = errors.New("peer: permission denied")
	ErrUnauthorized = errors.New("peer: unauthenticated")
)

var sentinels = map[error][]codes.Code{
	ErrNotFound:              {codes.NotFound},
	ErrInvalid:               {codes.InvalidArgument, codes.OutOfRange},
	ErrRefused:               {codes.FailedPrecondition},
	ErrConflict:              {codes.AlreadyExists, codes.Aborted},
	ErrForbidden:             {codes.PermissionDenied},
	ErrUnauthorized:          {codes.Unauthenticated},
	apierr.ErrUnavailable:    {codes.Unavailable},
	context.DeadlineExceeded: {codes.DeadlineExceeded},
	context.Canceled:         {codes.Canceled},
}

// Is matches the sentinel of e's code; apierr.ErrUnavailable, context.DeadlineExceeded and
// context.Canceled included, so the apierr interceptor answers those by their kind.
func (e *Error) Is(target error) bool {
	for _, c := range sentinels[target] {
		if c == e.Code {
			return true
		}
	}
	return false
}

// Reason is the reason of the peer's *Error in err's chain, or "".
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// Payment is the caller's own error for a peer's payment refusal (BILLING_SUSPENDED,
// INSUFFICIENT_CREDITS) in err's chain, nil for any other error: the REST client sees the
// same 402 whichever service refused, where a wrapped refusal would be masked as a 500.
func Payment(err error) error {
	switch Reason(err) {
	case apierr.ReasonBillingSuspended:
		return apierr.BillingSuspended()
	case apierr.ReasonInsufficientCredits:
		return apierr.New(codes.FailedPrecondition, apierr.ReasonInsufficientCredits, "the credit balance cannot cover the send")
	}
	return nil
}

func (c *Conn) translate(method string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s %s: %w", c.peer, method, err)
	}
	return &Error{
		Peer: c.peer, Method: method, Code: st.Code(),
		Reason: apierr.Reason(err), Fields: apierr.FieldViolations(err), st: st,
	}
}

// Status is the peer's status as it answered, for the one place that serves a peer's own API
// to REST clients (the gateway, which maps services' statuses for every route). A service
// never returns it: the apierr interceptor would mask it anyway.
func (e *Error) Status() *status.Status { return e.st }
