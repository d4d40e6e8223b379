// Package server implements chorus.billing.v1.BillingService: validation, tenancy and the
// mapping of store results to API errors.
package server

import (
	"errors"
	"fmt"
	"math"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	"github.com/chorus-sms/chorus/pkg/apierr"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	"github.com/chorus-sms/chorus/services/billing/internal/store"
)

// maxCredits bounds one grant, charge or hold: far above any real one, far below overflow.
const maxCredits = 10_000_000

// Server answers the BillingService RPCs.
type Server struct {
	billingv1.UnimplementedBillingServiceServer
	store *store.Store
}

// New returns a Server over st.
func New(st *store.Store) *Server { return &Server{store: st} }

// UnscopedMethods are the operator RPCs: they name the organization in the request and are
// callable without one on the call.
var UnscopedMethods = []string{
	billingv1.BillingService_SetAccount_FullMethodName,
	billingv1.BillingService_SetPlan_FullMethodName,
	billingv1.BillingService_SetBillingStatus_FullMethodName,
	billingv1.BillingService_GrantCredits_FullMethodName,
}

// storeError maps the store's sentinel errors to API errors; others pass through to be masked.
func storeError(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apierr.NotFound("hold not found")
	case errors.Is(err, store.ErrInsufficient):
		return apierr.New(codes.FailedPrecondition, apierr.ReasonInsufficientCredits, "not enough credits")
	case errors.Is(err, store.ErrSuspended):
		return apierr.New(codes.FailedPrecondition, apierr.ReasonBillingSuspended, "the organization's billing is suspended")
	case errors.Is(err, store.ErrHoldExhausted):
		return apierr.New(codes.FailedPrecondition, apierr.ReasonHoldExhausted, "the hold has fewer credits left than the message costs")
	case errors.Is(err, store.ErrHoldReleased):
		return apierr.New(codes.FailedPrecondition, apierr.ReasonHoldReleased, "the hold was released")
	case errors.Is(err, store.ErrKeyReused):
		return apierr.Conflict("this key was already used with other values")
	case errors.Is(err, store.ErrIncludedNeedsFullService):
		return apierr.Field("included", "included credits belong to full_service accounts")
	case errors.Is(err, store.ErrOverflow):
		return apierr.Field("amount", "the balance would exceed its maximum")
	}
	return err
}

// bodyID parses an id sent in a request body: a malformed one is a validation error naming
// field.
func bodyID(fields apierr.Fields, field, s string) uuid.UUID {
	id, err := uuid.Parse(s)
	if err != nil {
		fields.Add(field, "must be a UUID")
	}
	return id
}

// credits checks a credit count is within [min, maxCredits].
func credits(fields apierr.Fields, field string, n, min int32) {
	if n < min || n > maxCredits {
		fields.Add(field, fmt.Sprintf("must be between %d and %d", min, maxCredits))
	}
}

func toCredits(b store.Balance) *billingv1.Credits {
	total := min(int64(b.Available)+int64(b.Included), math.MaxInt32)
	return &billingv1.Credits{Available: b.Available, Included: b.Included, Total: int32(total)}
}

func toHold(h store.Hold) *billingv1.Hold {
	return &billingv1.Hold{Id: h.ID.String(), Held: h.Held(), Remaining: h.Remaining, Released: h.Released}
}
