// Package apierr builds the gRPC errors services return: a status code plus an
// errdetails.ErrorInfo whose Reason is the stable API error code, and for validation errors a
// BadRequest naming each field. The gateway turns them into the one REST error body.
package apierr

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Domain is the ErrorInfo domain of every Chorus error.
const Domain = "chorus"

// Error is an error this process answers its caller with, in its own words: a gRPC status
// with its reason (and fields). The server interceptor forwards only these; a status that
// arrived from a peer is not one, so a peer's text never travels on through us.
type Error struct{ st *status.Status }

// Error returns the code and message, for logs.
func (e *Error) Error() string { return e.st.Code().String() + ": " + e.st.Message() }

// GRPCStatus is the status the caller receives.
func (e *Error) GRPCStatus() *status.Status { return e.st }

// ErrUnavailable is matched (errors.Is) by the errors of a peer that could not be reached;
// the interceptor answers them with UNAVAILABLE in its own words, so the client retries.
var ErrUnavailable = errors.New("a service this request needs is unavailable")

// New returns an error with the given code, reason and message.
func New(code codes.Code, reason, msg string) error {
	st := status.New(code, msg)
	if withInfo, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: Domain}); err == nil {
		st = withInfo
	}
	return &Error{st: st}
}

// NotFound is the 404 every missing or foreign id gets.
func NotFound(msg string) error { return New(codes.NotFound, ReasonNotFound, msg) }

// LimitReached is a 429 for a quota a service keeps (not the gateway's request rate), with a
// RetryInfo the gateway sends as Retry-After: when the quota is back.
func LimitReached(reason, msg string, retry time.Duration) error {
	st := status.New(codes.ResourceExhausted, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: Domain}, &errdetails.RetryInfo{RetryDelay: durationpb.New(retry)}); err == nil {
		st = d
	}
	return &Error{st: st}
}

// BillingSuspended refuses a send of an organization whose billing is suspended (a 402), in
// the same words whichever service refuses it.
func BillingSuspended() error {
	return New(codes.FailedPrecondition, ReasonBillingSuspended, "the organization's billing is suspended")
}

// Conflict is a 409.
func Conflict(msg string) error { return New(codes.AlreadyExists, ReasonConflict, msg) }

// Fields collects validation failures by field name (the REST field name, lowerCamelCase).
type Fields map[string]string

// Add records a failure for field; the first message for a field wins.
func (f Fields) Add(field, msg string) {
	if _, ok := f[field]; !ok {
		f[field] = msg
	}
}

// Err returns nil when there are no failures, else an InvalidArgument VALIDATION_FAILED error
// naming every field.
func (f Fields) Err() error {
	if len(f) == 0 {
		return nil
	}
	return Validation(f)
}

// Validation returns a VALIDATION_FAILED error for the given fields.
func Validation(fields Fields) error {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	msg := "invalid request"
	if len(names) > 0 {
		msg = "invalid " + names[0] + ": " + fields[names[0]]
	}
	br := &errdetails.BadRequest{}
	for _, n := range names {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: n, Description: fields[n]})
	}
	st := status.New(codes.InvalidArgument, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: ReasonValidation, Domain: Domain}, br); err == nil {
		st = d
	}
	return &Error{st: st}
}

// Field is a one-field validation error.
func Field(field, msg string) error { return Validation(Fields{field: msg}) }

// FieldViolations returns the fields a VALIDATION_FAILED error names, with their messages, or
// nil when it names none.
func FieldViolations(err error) map[string]string {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	var fields map[string]string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if fields == nil {
					fields = map[string]string{}
				}
				fields[v.GetField()] = v.GetDescription()
			}
		}
	}
	return fields
}

// Reason returns the ErrorInfo reason of err, or "" when it carries none.
func Reason(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.Reason
		}
	}
	return ""
}

// UnaryServerInterceptor is the service's error boundary: only an *Error (created in this
// process, wrapped or not) leaves with its own code, reason and message. Everything else,
// including a status a peer answered with, is logged with the method and masked: cancellation
// and deadlines by their codes, an unreachable peer as UNAVAILABLE, the rest as INTERNAL.
func UnaryServerInterceptor(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				log.ErrorContext(ctx, "panic in handler", "method", info.FullMethod, "panic", r)
				err = New(codes.Internal, ReasonInternal, "internal error")
			}
		}()
		resp, err = handler(ctx, req)
		if err == nil {
			return resp, nil
		}
		return nil, boundary(ctx, log, info.FullMethod, err)
	}
}

// StreamServerInterceptor is UnaryServerInterceptor's boundary for streaming RPCs: the error
// that ends the stream is forwarded or masked by the same rules.
func StreamServerInterceptor(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		ctx := ss.Context()
		defer func() {
			if r := recover(); r != nil {
				log.ErrorContext(ctx, "panic in handler", "method", info.FullMethod, "panic", r)
				err = New(codes.Internal, ReasonInternal, "internal error")
			}
		}()
		if err = handler(srv, ss); err == nil {
			return nil
		}
		return boundary(ctx, log, info.FullMethod, err)
	}
}

// boundary is what a handler's error leaves the process as.
func boundary(ctx context.Context, log *slog.Logger, method string, err error) error {
	var own *Error
	switch {
	case errors.As(err, &own):
		return own
	case errors.Is(err, context.Canceled):
		return New(codes.Canceled, ReasonCanceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		log.WarnContext(ctx, "request timed out", "method", method, "err", err)
		return New(codes.DeadlineExceeded, ReasonDeadlineExceeded, "request timed out")
	case errors.Is(err, ErrUnavailable):
		log.WarnContext(ctx, "peer unavailable", "method", method, "err", err)
		return New(codes.Unavailable, ReasonUnavailable, "a service this request needs is unavailable; retry later")
	}
	log.ErrorContext(ctx, "request failed", "method", method, "err", err)
	return New(codes.Internal, ReasonInternal, "internal error")
}
