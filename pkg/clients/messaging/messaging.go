// Package messaging is the typed client of the messaging service: the public routes the
// gateway serves without a token (carrier webhooks and short-link redirects, never retried: a
// carrier retries its own webhooks, and every followed link is one click), and the calls bulk
// senders make (sending numbers, queued messages keyed by a dedupe key, so retried).
package messaging

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
)

// Client calls the messaging service.
type Client struct {
	clients.Client[messagingv1.MessagingServiceClient]
}

// New returns a client over conn.
func New(conn *clients.Conn) *Client {
	return &Client{Client: clients.NewClient(conn, messagingv1.NewMessagingServiceClient)}
}

// PhoneNumber returns org's sending number id, or its default number when id is empty. A
// number of another organization is a *clients.Error matching clients.ErrNotFound, as a
// missing one.
func (c *Client) PhoneNumber(ctx context.Context, org uuid.UUID, id string) (*messagingv1.GetPhoneNumberResponse, error) {
	return clients.Call(ctx, c.Conn(), "GetPhoneNumber", clients.Idempotent, func(ctx context.Context) (*messagingv1.GetPhoneNumberResponse, error) {
		return c.Stub.GetPhoneNumber(c.Conn().For(ctx, org), &messagingv1.GetPhoneNumberRequest{PhoneNumberId: id})
	})
}

// FindPhoneNumbers returns those of ids that are org's sending numbers (another
// organization's is left out, as a missing one).
func (c *Client) FindPhoneNumbers(ctx context.Context, org uuid.UUID, ids []string) ([]*messagingv1.GetPhoneNumberResponse, error) {
	resp, err := clients.Call(ctx, c.Conn(), "FindPhoneNumbers", clients.Idempotent, func(ctx context.Context) (*messagingv1.FindPhoneNumbersResponse, error) {
		return c.Stub.FindPhoneNumbers(c.Conn().For(ctx, org), &messagingv1.FindPhoneNumbersRequest{PhoneNumberIds: ids})
	})
	return resp.GetNumbers(), err
}

// CheckPool adds to f, under field[i], each of pool that is not org's number (another
// organization's is a missing one), in one call.
func (c *Client) CheckPool(ctx context.Context, org uuid.UUID, field string, pool []uuid.UUID, f apierr.Fields) error {
	ids := make([]string, len(pool))
	for i, id := range pool {
		ids[i] = id.String()
	}
	found, err := c.FindPhoneNumbers(ctx, org, ids)
	if err != nil {
		return fmt.Errorf("sending numbers: %w", err)
	}
	ours := make(map[string]bool, len(found))
	for _, n := range found {
		ours[n.GetPhoneNumberId()] = true
	}
	for i, id := range ids {
		if !ours[id] {
			f.Add(fmt.Sprintf("%s[%d]", field, i), "no such phone number in the organization")
		}
	}
	return nil
}

// PickSenders gives each of phones, recipients of org's source (kind and id), its number id
// from pool, by messaging's sticky rule, in phones' order.
func (c *Client) PickSenders(ctx context.Context, org uuid.UUID, kind, id string, pool, phones []string) ([]string, error) {
	resp, err := clients.Call(ctx, c.Conn(), "PickSenders", clients.Idempotent, func(ctx context.Context) (*messagingv1.PickSendersResponse, error) {
		return c.Stub.PickSenders(c.Conn().For(ctx, org), &messagingv1.PickSendersRequest{
			Source: &messagingv1.BulkSource{SourceKind: kind, SourceId: id}, FromPhoneNumberIds: pool, Phones: phones})
	})
	return resp.GetPhoneNumberIds(), err
}

// Message returns org's message id as its thread shows it. Another organization's message is
// a *clients.Error matching clients.ErrNotFound, as a missing one.
func (c *Client) Message(ctx context.Context, org uuid.UUID, id string) (*messagingv1.Message, error) {
	resp, err := clients.Call(ctx, c.Conn(), "GetMessage", clients.Idempotent, func(ctx context.Context) (*messagingv1.GetMessageResponse, error) {
		return c.Stub.GetMessage(c.Conn().For(ctx, org), &messagingv1.GetMessageRequest{Id: id})
	})
	return resp.GetMessage(), err
}

// SendMessages queues up to 1000 messages of org. Each is stored once per dedupe key, so a
// retry queues nothing twice; the ids come back in request order.
func (c *Client) SendMessages(ctx context.Context, org uuid.UUID, msgs []*messagingv1.OutgoingMessage) ([]string, error) {
	resp, err := clients.Call(ctx, c.Conn(), "SendMessages", clients.Idempotent, func(ctx context.Context) (*messagingv1.SendMessagesResponse, error) {
		return c.Stub.SendMessages(c.Conn().For(ctx, org), &messagingv1.SendMessagesRequest{Messages: msgs})
	})
	return resp.GetMessageIds(), err
}

// The bulk hand-off of a source's (a campaign's or poll's) audience: OpenBulk holds its
// batches back, QueueBulk hands them over, and ReleaseBulk lets them go or CancelBulk drops
// them. Every call is retried: a state is set, not toggled, and a batch's messages are
// created once per dedupe key.

// OpenBulk holds back org's bulk batches of the source until ReleaseBulk (a canceled source
// stays canceled).
func (c *Client) OpenBulk(ctx context.Context, org uuid.UUID, kind, id string) error {
	_, err := clients.Call(ctx, c.Conn(), "OpenBulk", clients.Idempotent, func(ctx context.Context) (*messagingv1.OpenBulkResponse, error) {
		return c.Stub.OpenBulk(c.Conn().For(ctx, org), &messagingv1.OpenBulkRequest{Source: &messagingv1.BulkSource{SourceKind: kind, SourceId: id}})
	})
	return err
}

// QueueBulk queues up to 1000 messages of one source as a bulk batch: stored as one row, each
// message created when it is due (quiet hours), the dispatch queue is short and the source is
// neither held nor paused. A retry queues nothing twice (dedupe keys), and no ids come back.
// pool, when not empty, is the source's number pool: messaging picks each message's number
// from it (the messages name none).
func (c *Client) QueueBulk(ctx context.Context, org uuid.UUID, msgs []*messagingv1.OutgoingMessage, pool []string) error {
	_, err := clients.Call(ctx, c.Conn(), "QueueBulk", clients.Idempotent, func(ctx context.Context) (*messagingv1.QueueBulkResponse, error) {
		return c.Stub.QueueBulk(c.Conn().For(ctx, org), &messagingv1.QueueBulkRequest{Messages: msgs, FromPhoneNumberIds: pool})
	})
	return err
}

// BulkNumbers lists the numbers of org's bulk source with what each sent and whether the
// carrier's refusals took it out of the source's rotation.
func (c *Client) BulkNumbers(ctx context.Context, org uuid.UUID, kind, id string) ([]*messagingv1.BulkNumber, error) {
	resp, err := clients.Call(ctx, c.Conn(), "GetBulkNumbers", clients.Idempotent, func(ctx context.Context) (*messagingv1.GetBulkNumbersResponse, error) {
		return c.Stub.GetBulkNumbers(c.Conn().For(ctx, org), &messagingv1.GetBulkNumbersRequest{Source: &messagingv1.BulkSource{SourceKind: kind, SourceId: id}})
	})
	return resp.GetNumbers(), err
}

// ReleaseBulk lets org's bulk batches and messages of the source go (unless it was canceled).
func (c *Client) ReleaseBulk(ctx context.Context, org uuid.UUID, kind, id string) error {
	_, err := clients.Call(ctx, c.Conn(), "ReleaseBulk", clients.Idempotent, func(ctx context.Context) (*messagingv1.ReleaseBulkResponse, error) {
		return c.Stub.ReleaseBulk(c.Conn().For(ctx, org), &messagingv1.ReleaseBulkRequest{Source: &messagingv1.BulkSource{SourceKind: kind, SourceId: id}})
	})
	return err
}

// CancelBulk drops org's bulk batches of the source and withdraws its queued messages before
// it returns; final.
func (c *Client) CancelBulk(ctx context.Context, org uuid.UUID, kind, id string) error {
	_, err := clients.Call(ctx, c.Conn(), "CancelBulk", clients.Idempotent, func(ctx context.Context) (*messagingv1.CancelBulkResponse, error) {
		return c.Stub.CancelBulk(c.Conn().For(ctx, org), &messagingv1.CancelBulkRequest{Source: &messagingv1.BulkSource{SourceKind: kind, SourceId: id}})
	})
	return err
}

// HandleWebhook hands a carrier's webhook to messaging, which checks its signature.
func (c *Client) HandleWebhook(ctx context.Context, req *messagingv1.HandleWebhookRequest) (*messagingv1.HandleWebhookResponse, error) {
	return clients.Call(ctx, c.Conn(), "HandleWebhook", clients.Once, func(ctx context.Context) (*messagingv1.HandleWebhookResponse, error) {
		return c.Stub.HandleWebhook(ctx, req)
	})
}

// FollowShortLink records a click on the link code and returns its target URL.
func (c *Client) FollowShortLink(ctx context.Context, code, userAgent string) (string, error) {
	resp, err := clients.Call(ctx, c.Conn(), "FollowShortLink", clients.Once, func(ctx context.Context) (*messagingv1.FollowShortLinkResponse, error) {
		return c.Stub.FollowShortLink(ctx, &messagingv1.FollowShortLinkRequest{Code: code, UserAgent: userAgent})
	})
	return resp.GetUrl(), err
}

// Source states of SetSourceState, and the state OpenBulk sets (held: waiting for the
// source's billing hold), which SetSourceState does not take.
const (
	SourceActive   = "active"
	SourceHeld     = "held"
	SourcePaused   = "paused"
	SourceCanceled = "canceled"
)

// SetSourceState pauses, resumes or cancels org's queued messages of a campaign or poll; once
// it returns, none of a paused or canceled source's messages is handed to the carrier.
// Setting a state twice changes nothing, so it is retried.
func (c *Client) SetSourceState(ctx context.Context, org uuid.UUID, kind, id, state string) error {
	_, err := clients.Call(ctx, c.Conn(), "SetSourceState", clients.Idempotent, func(ctx context.Context) (*messagingv1.SetSourceStateResponse, error) {
		return c.Stub.SetSourceState(c.Conn().For(ctx, org), &messagingv1.SetSourceStateRequest{SourceKind: kind, SourceId: id, State: state})
	})
	return err
}

// ShortenLinks returns org's short link of each URL for a source's messages (kind "campaign",
// "poll" or "test"), in order, creating the missing ones. The same (source, URL) always gets
// the same link, so it is retried.
func (c *Client) ShortenLinks(ctx context.Context, org uuid.UUID, kind, id string, urls []string) ([]string, error) {
	resp, err := clients.Call(ctx, c.Conn(), "ShortenLinks", clients.Idempotent, func(ctx context.Context) (*messagingv1.ShortenLinksResponse, error) {
		return c.Stub.ShortenLinks(c.Conn().For(ctx, org), &messagingv1.ShortenLinksRequest{SourceKind: kind, SourceId: id, Urls: urls})
	})
	return resp.GetShortUrls(), err
}
