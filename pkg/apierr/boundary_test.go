package apierr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// peerStatus is what a gRPC client returns when a peer answered with a reasoned error.
func peerStatus() error {
	st, _ := status.New(codes.NotFound, "organization 42 not found at 10.0.0.7").
		WithDetails(&errdetails.ErrorInfo{Reason: ReasonNotFound, Domain: Domain})
	return st.Err()
}

type unavailable struct{}

func (unavailable) Error() string        { return "orgs at 10.0.0.7:9001: connection refused" }
func (unavailable) Is(target error) bool { return target == ErrUnavailable }

func TestInterceptorForwardsOnlyErrorsOfThisProcess(t *testing.T) {
	intercept := UnaryServerInterceptor(slog.New(slog.NewTextHandler(io.Discard, nil)))
	cases := []struct {
		name   string
		err    error
		code   codes.Code
		reason string
		msg    string
	}{
		{"own error", Field("phoneNumber", "must be a phone number"), codes.InvalidArgument, ReasonValidation, "invalid phoneNumber: must be a phone number"},
		{"own error wrapped", fmt.Errorf("reply: %w", NotFound("contact not found")), codes.NotFound, ReasonNotFound, "contact not found"},
		{"peer status", peerStatus(), codes.Internal, ReasonInternal, "internal error"},
		{"peer status wrapped", fmt.Errorf("get organization: %w", peerStatus()), codes.Internal, ReasonInternal, "internal error"},
		{"peer unavailable", fmt.Errorf("get organization: %w", unavailable{}), codes.Unavailable, ReasonUnavailable, "a service this request needs is unavailable; retry later"},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), codes.DeadlineExceeded, ReasonDeadlineExceeded, "request timed out"},
		{"plain", errors.New("pq: relation does not exist"), codes.Internal, ReasonInternal, "internal error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := intercept(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x/Y"}, func(context.Context, any) (any, error) {
				return nil, c.err
			})
			st := status.Convert(err)
			assert.Equal(t, c.code, st.Code())
			assert.Equal(t, c.reason, Reason(err))
			assert.Equal(t, c.msg, st.Message())
		})
	}
	_, err := intercept(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x/Y"}, func(context.Context, any) (any, error) {
		return nil, Field("phoneNumber", "must be a phone number")
	})
	assert.Equal(t, map[string]string{"phoneNumber": "must be a phone number"}, FieldViolations(err), "fields survive the boundary")
}
