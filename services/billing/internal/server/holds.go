package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	"github.com/chorus-sms/chorus/services/billing/internal/store"
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

// maxPosts bounds one PostHolds call.
const maxPosts = 1000

// PostHolds applies up to maxPosts posts, each exactly once per message id as PostHold's: one
// call for a batch of dispatched messages instead of one each. A post billing refuses is
// answered with its reason in its own result; any other failure fails the call, and a retry
// answers the posts already made as they were made.
func (s *Server) PostHolds(ctx context.Context, req *billingv1.PostHoldsRequest) (*billingv1.PostHoldsResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	posts := req.GetPosts()
	if len(posts) == 0 || len(posts) > maxPosts {
		return nil, apierr.Field("posts", fmt.Sprintf("must hold 1 to %d posts", maxPosts))
	}
	parsed := make([]store.Post, len(posts))
	fields := apierr.Fields{}
	for i, p := range posts {
		field := fmt.Sprintf("posts[%d].", i)
		parsed[i] = store.Post{Hold: bodyID(fields, field+"holdId", p.GetHoldId()), Message: bodyID(fields, field+"messageId", p.GetMessageId()),
			Credits: p.GetCredits()}
		credits(fields, field+"credits", p.GetCredits(), 0)
	}
	if err := fields.Err(); err != nil {
		return nil, err
	}
	done, err := s.store.PostHolds(ctx, org, parsed)
	if err != nil {
		return nil, err
	}
	results := make([]*billingv1.PostHoldResult, len(posts))
	for i, d := range done {
		refused, err := postRefusal(d.Err)
		if err != nil {
			return nil, fmt.Errorf("post message %s: %w", parsed[i].Message, err)
		}
		results[i] = &billingv1.PostHoldResult{MessageId: posts[i].GetMessageId(), Charged: d.Charged, Refused: refused}
	}
	return &billingv1.PostHoldsResponse{Results: results}, nil
}

// postRefusal names the reason of a post billing refuses, or returns err when it is no refusal.
func postRefusal(err error) (string, error) {
	switch {
	case err == nil:
		return "", nil
	case errors.Is(err, store.ErrNotFound):
		return apierr.ReasonHoldNotFound, nil
	case errors.Is(err, store.ErrHoldReleased):
		return apierr.ReasonHoldReleased, nil
	case errors.Is(err, store.ErrHoldExhausted):
		return apierr.ReasonHoldExhausted, nil
	case errors.Is(err, store.ErrSuspended):
		return apierr.ReasonBillingSuspended, nil
	}
	return "", err
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
