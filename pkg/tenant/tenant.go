// Package tenant carries the caller's organization, user and access level from the gateway to
// the services as gRPC metadata, and lets services re-check them. Services trust this metadata
// only because they are reachable from inside the cluster alone (see deploy/).
package tenant

import (
	"context"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/chorus-sms/chorus/pkg/apierr"
)

// Metadata keys the gateway sets on every call.
const (
	MDOrg       = "x-chorus-org"
	MDUser      = "x-chorus-user"
	MDAccess    = "x-chorus-access"
	MDRequestID = "x-request-id"
)

// Access is a membership level. Levels are ordered: read < write < admin.
type Access int

// Access levels.
const (
	AccessNone Access = iota
	AccessRead
	AccessWrite
	AccessAdmin
)

// String returns the wire name of the level.
func (a Access) String() string {
	switch a {
	case AccessRead:
		return "read"
	case AccessWrite:
		return "write"
	case AccessAdmin:
		return "admin"
	}
	return "none"
}

// ParseAccess reads a wire name; unknown names are AccessNone.
func ParseAccess(s string) Access {
	switch strings.ToLower(s) {
	case "read":
		return AccessRead
	case "write":
		return AccessWrite
	case "admin":
		return AccessAdmin
	}
	return AccessNone
}

// Principal is who is calling, for which organization.
type Principal struct {
	OrgID     uuid.UUID
	User      string
	Access    Access
	RequestID string
}

type ctxKey struct{}

// WithPrincipal stores p in ctx.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal stored in ctx, if any.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// Org returns the organization of the call. The interceptor guarantees it is set on every
// tenant-scoped RPC, so a missing one is a programming error reported as Unauthenticated.
func Org(ctx context.Context) (uuid.UUID, error) {
	p, ok := FromContext(ctx)
	if !ok || p.OrgID == uuid.Nil {
		return uuid.Nil, apierr.New(codes.Unauthenticated, apierr.ReasonUnauthenticated, "no organization on the call")
	}
	return p.OrgID, nil
}

// RequireWrite returns the organization when the caller may write to it.
func RequireWrite(ctx context.Context) (uuid.UUID, error) {
	org, err := Org(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	if p, _ := FromContext(ctx); p.Access < AccessWrite {
		return uuid.Nil, apierr.New(codes.PermissionDenied, apierr.ReasonForbidden, "write access to the organization is required")
	}
	return org, nil
}

// AppendToOutgoing adds p to the outgoing metadata of ctx (used by the gateway and by
// service-to-service clients to forward the caller).
func AppendToOutgoing(ctx context.Context, p Principal) context.Context {
	kv := []string{MDOrg, p.OrgID.String(), MDUser, p.User, MDAccess, p.Access.String()}
	if p.RequestID != "" {
		kv = append(kv, MDRequestID, p.RequestID)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// MD is p as the metadata AppendToOutgoing adds, for a caller that hands metadata over
// whole (the gateway's mux).
func (p Principal) MD() metadata.MD {
	vals := []string{p.OrgID.String(), p.User, p.Access.String(), p.RequestID}
	md := metadata.MD{MDOrg: vals[0:1:1], MDUser: vals[1:2:2], MDAccess: vals[2:3:3]}
	if p.RequestID != "" {
		md[MDRequestID] = vals[3:4:4]
	}
	return md
}

// FromIncoming reads the principal from incoming gRPC metadata. Each key is read on its own:
// metadata.FromIncomingContext would copy every header of the call.
func FromIncoming(ctx context.Context) (Principal, bool) {
	first := func(k string) string {
		if v := metadata.ValueFromIncomingContext(ctx, k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	org, err := uuid.Parse(first(MDOrg))
	if err != nil {
		return Principal{RequestID: first(MDRequestID)}, false
	}
	return Principal{OrgID: org, User: first(MDUser), Access: ParseAccess(first(MDAccess)), RequestID: first(MDRequestID)}, true
}

// UnaryServerInterceptor puts the principal into the context and rejects tenant-scoped calls
// without one. Methods listed in unscoped (full method names) may be called without an org.
func UnaryServerInterceptor(unscoped ...string) grpc.UnaryServerInterceptor {
	skip := make(map[string]bool, len(unscoped))
	for _, m := range unscoped {
		skip[m] = true
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		p, ok := FromIncoming(ctx)
		if !ok && !skip[info.FullMethod] {
			return nil, apierr.New(codes.Unauthenticated, apierr.ReasonUnauthenticated, "no organization on the call")
		}
		if ok {
			ctx = WithPrincipal(ctx, p)
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streaming RPCs: the stream's context
// carries the principal, and a tenant-scoped stream without one is refused.
func StreamServerInterceptor(unscoped ...string) grpc.StreamServerInterceptor {
	skip := make(map[string]bool, len(unscoped))
	for _, m := range unscoped {
		skip[m] = true
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		p, ok := FromIncoming(ss.Context())
		if !ok && !skip[info.FullMethod] {
			return apierr.New(codes.Unauthenticated, apierr.ReasonUnauthenticated, "no organization on the call")
		}
		if ok {
			ss = principalStream{ServerStream: ss, ctx: WithPrincipal(ss.Context(), p)}
		}
		return handler(srv, ss)
	}
}

type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s principalStream) Context() context.Context { return s.ctx }
