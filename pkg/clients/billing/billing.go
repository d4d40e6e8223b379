// Package billing is the typed client of the billing service's credit calls. Each is keyed
// (hold id, message id) so that billing applies it once, which makes all of them safe to
// retry when billing did not answer.
package billing

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

// Client calls the billing service.
type Client struct {
	clients.Client[billingv1.BillingServiceClient]
}

// New returns a client over conn.
func New(conn *clients.Conn) *Client {
	return &Client{Client: clients.NewClient(conn, billingv1.NewBillingServiceClient)}
}

// Suspended reports whether org's account is suspended or archived: billing refuses every hold
// and charge of such an account, so a caller can refuse a send before queuing anything.
func (c *Client) Suspended(ctx context.Context, org uuid.UUID) (bool, error) {
	res, err := clients.Call(ctx, c.Conn(), "GetBillingStatus", clients.Idempotent, func(ctx context.Context) (*billingv1.GetBillingStatusResponse, error) {
		return c.Stub.GetBillingStatus(c.Conn().For(ctx, org), &billingv1.GetBillingStatusRequest{})
	})
	if err != nil {
		return false, err
	}
	switch res.GetStatus().GetBillingStatus() {
	case "suspended", "archived":
		return true, nil
	}
	return false, nil
}

// PlaceHold reserves credits of org under holdID. A refusal is a *clients.Error whose reason
// is apierr.ReasonInsufficientCredits or apierr.ReasonBillingSuspended.
func (c *Client) PlaceHold(ctx context.Context, org uuid.UUID, holdID string, credits int32) error {
	_, err := clients.Call(ctx, c.Conn(), "PlaceHold", clients.Idempotent, func(ctx context.Context) (*billingv1.PlaceHoldResponse, error) {
		return c.Stub.PlaceHold(c.Conn().For(ctx, org), &billingv1.PlaceHoldRequest{HoldId: holdID, Credits: credits})
	})
	return err
}

// Hold places a bulk send's hold (a campaign's or a poll's) and tells a refusal, which ends
// the send with its reason (INSUFFICIENT_CREDITS or BILLING_SUSPENDED as refusal), from a
// failure worth retrying (err).
func (c *Client) Hold(ctx context.Context, org uuid.UUID, holdID string, credits int32) (refusal string, err error) {
	err = c.PlaceHold(ctx, org, holdID, credits)
	switch reason := clients.Reason(err); {
	case err == nil:
		return "", nil
	case reason == apierr.ReasonInsufficientCredits || reason == apierr.ReasonBillingSuspended:
		return reason, nil
	default:
		return "", fmt.Errorf("place hold: %w", err)
	}
}

// PostHold debits one message's credits against a hold, once per message.
func (c *Client) PostHold(ctx context.Context, org uuid.UUID, holdID string, message uuid.UUID, credits int32) error {
	_, err := clients.Call(ctx, c.Conn(), "PostHold", clients.Idempotent, func(ctx context.Context) (*billingv1.PostHoldResponse, error) {
		return c.Stub.PostHold(c.Conn().For(ctx, org), &billingv1.PostHoldRequest{HoldId: holdID, MessageId: message.String(), Credits: credits})
	})
	return err
}

// Post is one message's debit against a hold.
type Post struct {
	HoldID    string
	MessageID uuid.UUID
	Credits   int32
}

// PostHolds debits each message against its hold, once per message, in one call; the answer
// holds, in the order of posts, the reason billing refused each ("" when it was posted).
func (c *Client) PostHolds(ctx context.Context, org uuid.UUID, posts []Post) ([]string, error) {
	req := &billingv1.PostHoldsRequest{Posts: make([]*billingv1.PostHoldRequest, len(posts))}
	for i, p := range posts {
		req.Posts[i] = &billingv1.PostHoldRequest{HoldId: p.HoldID, MessageId: p.MessageID.String(), Credits: p.Credits}
	}
	res, err := clients.Call(ctx, c.Conn(), "PostHolds", clients.Idempotent, func(ctx context.Context) (*billingv1.PostHoldsResponse, error) {
		return c.Stub.PostHolds(c.Conn().For(ctx, org), req)
	})
	if err != nil {
		return nil, err
	}
	if len(res.GetResults()) != len(posts) {
		return nil, fmt.Errorf("billing answered %d of %d posts", len(res.GetResults()), len(posts))
	}
	refused := make([]string, len(posts))
	for i, r := range res.GetResults() {
		refused[i] = r.GetRefused()
	}
	return refused, nil
}

// RefundDebit returns a message's debit, if it had one.
func (c *Client) RefundDebit(ctx context.Context, org, message uuid.UUID) error {
	_, err := clients.Call(ctx, c.Conn(), "RefundDebit", clients.Idempotent, func(ctx context.Context) (*billingv1.RefundDebitResponse, error) {
		return c.Stub.RefundDebit(c.Conn().For(ctx, org), &billingv1.RefundDebitRequest{MessageId: message.String()})
	})
	return err
}

// ReleaseHold gives back what is left of a hold.
func (c *Client) ReleaseHold(ctx context.Context, org uuid.UUID, holdID string) error {
	_, err := clients.Call(ctx, c.Conn(), "ReleaseHold", clients.Idempotent, func(ctx context.Context) (*billingv1.ReleaseHoldResponse, error) {
		return c.Stub.ReleaseHold(c.Conn().For(ctx, org), &billingv1.ReleaseHoldRequest{HoldId: holdID})
	})
	return err
}
