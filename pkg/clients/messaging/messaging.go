// Package messaging is the typed client of the messaging service's public routes, which the
// gateway serves without a token: carrier webhooks and short-link redirects. Neither is
// retried: a carrier retries its own webhooks, and every followed link is one click.
package messaging

import (
	"context"

	"github.com/chorus-sms/chorus/pkg/clients"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
)

// Client calls the messaging service.
type Client struct {
	conn *clients.Conn
	stub messagingv1.MessagingServiceClient
}

// New returns a client over conn.
func New(conn *clients.Conn) *Client {
	return &Client{conn: conn, stub: messagingv1.NewMessagingServiceClient(conn.ClientConn())}
}

// HandleWebhook hands a carrier's webhook to messaging, which checks its signature.
func (c *Client) HandleWebhook(ctx context.Context, req *messagingv1.HandleWebhookRequest) (*messagingv1.HandleWebhookResponse, error) {
	return clients.Call(ctx, c.conn, "HandleWebhook", clients.Once, func(ctx context.Context) (*messagingv1.HandleWebhookResponse, error) {
		return c.stub.HandleWebhook(ctx, req)
	})
}

// FollowShortLink records a click on the link code and returns its target URL.
func (c *Client) FollowShortLink(ctx context.Context, code, userAgent string) (string, error) {
	resp, err := clients.Call(ctx, c.conn, "FollowShortLink", clients.Once, func(ctx context.Context) (*messagingv1.FollowShortLinkResponse, error) {
		return c.stub.FollowShortLink(ctx, &messagingv1.FollowShortLinkRequest{Code: code, UserAgent: userAgent})
	})
	return resp.GetUrl(), err
}
