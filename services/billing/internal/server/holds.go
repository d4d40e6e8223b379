package server

import (
	"context"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

// PlaceHold reserves credits of the caller's organization once per hold id.
func (s *Server) PlaceHold(ctx context.Context, req *billingv1.PlaceHoldRequest) (*billingv1.PlaceHoldResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	fields := apierr.Fields{}
	id := bodyID(fields, "holdId", req.GetHoldId())
	credits(fields, "credits", req.GetCredits(), 1)
	if err := fields.Err(); err != nil {
		return nil, err
	}
	h, b, err := s.store.PlaceHold(ctx, org, id, req.GetCredits())
	if err != nil {
		return nil, storeError(err)
	}
	return &billingv1.PlaceHoldResponse{Hold: toHold(h), Credits: toCredits(b)}, nil
}

// PostHold debits one message against a hold once per message id.
func (s *Server) PostHold(ctx context.Context, req *billingv1.PostHoldRequest) (*billingv1.PostHoldResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	fields := apierr.Fields{}
	id := bodyID(fields, "holdId", req.GetHoldId())
	message := bodyID(fields, "messageId", req.GetMessageId())
	credits(fields, "credits", req.GetCredits(), 0)
	if err := fields.Err(); err != nil {
		return nil, err
	}
	charged, h, err := s.store.PostHold(ctx, org, id, message, req.GetCredits())
	if err != nil {
		return nil, storeError(err)
	}
	return &billingv1.PostHoldResponse{Charged: charged, Hold: toHold(h)}, nil
}

// ReleaseHold returns what a hold has left to the balance; a repeat changes nothing.
func (s *Server) ReleaseHold(ctx context.Context, req *billingv1.ReleaseHoldRequest) (*billingv1.ReleaseHoldResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	fields := apierr.Fields{}
	id := bodyID(fields, "holdId", req.GetHoldId())
	if err := fields.Err(); err != nil {
		return nil, err
	}
	returned, h, b, err := s.store.ReleaseHold(ctx, org, id)
	if err != nil {
		return nil, storeError(err)
	}
	return &billingv1.ReleaseHoldResponse{Returned: returned, Hold: toHold(h), Credits: toCredits(b)}, nil
}

// RefundDebit gives back a message's debit after the carrier failed it; a repeat, or a message
// never debited, changes nothing.
func (s *Server) RefundDebit(ctx context.Context, req *billingv1.RefundDebitRequest) (*billingv1.RefundDebitResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	fields := apierr.Fields{}
	message := bodyID(fields, "messageId", req.GetMessageId())
	if err := fields.Err(); err != nil {
		return nil, err
	}
	refunded, b, err := s.store.RefundDebit(ctx, org, message)
	if err != nil {
		return nil, storeError(err)
	}
	return &billingv1.RefundDebitResponse{Refunded: refunded, Credits: toCredits(b)}, nil
}
