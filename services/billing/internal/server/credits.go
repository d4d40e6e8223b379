package server

import (
	"context"
	"strings"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

// maxKeyLen bounds a grant's idempotency key.
const maxKeyLen = 200

// GrantCredits adds credits once per idempotency key (an operator RPC).
func (s *Server) GrantCredits(ctx context.Context, req *billingv1.GrantCreditsRequest) (*billingv1.GrantCreditsResponse, error) {
	fields := apierr.Fields{}
	org := bodyID(fields, "organizationId", req.GetOrganizationId())
	credits(fields, "amount", req.GetAmount(), 1)
	key := req.GetIdempotencyKey()
	if strings.TrimSpace(key) == "" || len(key) > maxKeyLen {
		fields.Add("idempotencyKey", "required, at most 200 characters")
	}
	if err := fields.Err(); err != nil {
		return nil, err
	}
	b, err := s.store.Grant(ctx, org, key, req.GetAmount(), req.GetIncluded())
	if err != nil {
		return nil, storeError(err)
	}
	return &billingv1.GrantCreditsResponse{Credits: toCredits(b)}, nil
}

// Charge debits a dispatched message of the caller's organization once per message id.
func (s *Server) Charge(ctx context.Context, req *billingv1.ChargeRequest) (*billingv1.ChargeResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	fields := apierr.Fields{}
	message := bodyID(fields, "messageId", req.GetMessageId())
	credits(fields, "credits", req.GetCredits(), 0)
	if err := fields.Err(); err != nil {
		return nil, err
	}
	if req.GetCredits() == 0 {
		// A free message (an opt-out confirmation, say) is never refused and debits nothing.
		a, err := s.store.Account(ctx, org)
		if err != nil {
			return nil, err
		}
		return &billingv1.ChargeResponse{Credits: toCredits(a.Balance)}, nil
	}
	d, b, err := s.store.Charge(ctx, org, message, req.GetCredits())
	if err != nil {
		return nil, storeError(err)
	}
	return &billingv1.ChargeResponse{Charged: d.Charged, ChargedIncluded: d.ChargedIncluded, Credits: toCredits(b)}, nil
}
