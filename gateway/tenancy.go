package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/metadata"

	"github.com/chorus-sms/chorus/pkg/apierr"
	orgsclient "github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/tenant"
)

// orgHeader selects the organization a request acts on (spec section 5).
const orgHeader = "X-Organization-Id"

func forbidden(msg string) apiError {
	return apiError{Status: http.StatusForbidden, Code: apierr.ReasonForbidden, Message: msg}
}

// accessChecker asks for a user's level in an organization: from the in-process cache while
// its change subscription is proven current (a change reaches it within a second), else from
// the orgs service, which caches in Redis and drops the answer when the membership changes.
type accessChecker struct {
	orgs *orgsclient.AccessCache
}

func (c *accessChecker) level(ctx context.Context, org uuid.UUID, user string) (tenant.Access, error) {
	return c.orgs.Access(withRequestID(ctx), org, user)
}

// isRead reports whether method only reads; every other method needs write access.
func isRead(method string) bool {
	return method == http.MethodGet || method == http.MethodHead
}

// parseOrgHeader accepts only the canonical 36-character form, so one organization has one
// spelling (and one rate-limit budget).
func parseOrgHeader(raw string) (uuid.UUID, bool) {
	if len(raw) != 36 {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(raw)
	return id, err == nil
}

// tenancy runs after authentication: it checks the organization header's form, spends the
// caller's rate-limit budget, then asks the orgs service for the caller's access, before any
// data is read. A missing or malformed header, no membership, or a read-only member calling a
// write method all answer 403 FORBIDDEN. The principal goes on in the context; forwardPrincipal
// turns it into gRPC metadata. A read takes its rate-limit decision alongside instead of first
// (see ratelimit_overlap.go); what the caller sees is the same.
func tenancy(access *accessChecker, limiter *rateLimiter, log *slog.Logger, next http.Handler) http.Handler {
	authorize := func(w http.ResponseWriter, r *http.Request, org uuid.UUID) {
		info := infoFrom(r.Context())
		level, err := access.level(r.Context(), org, info.user)
		if err != nil {
			e := fromStatus(err)
			log.WarnContext(r.Context(), "access check failed", "request_id", info.id, "status", e.Status, "err", err)
			writeError(w, r, e)
			return
		}
		if level < tenant.AccessRead {
			writeError(w, r, forbidden("no access to the organization"))
			return
		}
		if !isRead(r.Method) && level < tenant.AccessWrite {
			writeError(w, r, forbidden("write access to the organization is required"))
			return
		}
		p := tenant.Principal{OrgID: org, User: info.user, Access: level, RequestID: info.id}
		next.ServeHTTP(w, r.WithContext(tenant.WithPrincipal(r.Context(), p)))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r.Context())
		raw := r.Header.Get(orgHeader)
		if raw == "" {
			writeError(w, r, forbidden("the x-organization-id header is required"))
			return
		}
		org, ok := parseOrgHeader(raw)
		if !ok {
			writeError(w, r, forbidden("x-organization-id must be a UUID"))
			return
		}
		info.org = org.String()
		key := rateLimitKey(org, info.user)
		if res := limiter.leased(key); res != nil {
			limiter.apply(w, r, res) // a leased request is allowed
			authorize(w, r, org)
			return
		}
		if isRead(r.Method) && !limiter.refused.refused(key, time.Now()) {
			limiter.overlapRead(w, r, key, func(w http.ResponseWriter, r *http.Request) { authorize(w, r, org) })
			return
		}
		// Otherwise the limit is decided first, so a tenant over its limit does not also load
		// the orgs service or the services behind it.
		if !limiter.apply(w, r, limiter.decide(r.Context(), key)) {
			return
		}
		authorize(w, r, org)
	})
}

// forwardPrincipal is the mux's metadata annotator: the principal the gateway established
// travels to the service as the pkg/tenant metadata keys.
func forwardPrincipal(ctx context.Context, _ *http.Request) metadata.MD {
	p, ok := tenant.FromContext(ctx)
	if !ok {
		return nil
	}
	return p.MD()
}
