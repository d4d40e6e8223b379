// Package polls is the typed client of the polls service, for the services that show a poll
// as the API does (webhooks' poll.completed).
package polls

import (
	"context"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/clients"
	pollsv1 "github.com/chorus-sms/chorus/proto/gen/go/polls/v1"
)

// Client calls the polls service.
type Client struct {
	clients.Client[pollsv1.PollsServiceClient]
}

// New returns a client over conn.
func New(conn *clients.Conn) *Client {
	return &Client{Client: clients.NewClient(conn, pollsv1.NewPollsServiceClient)}
}

// Get returns org's poll id as GET /api/polls/{id} shows it. Another organization's
// poll is a *clients.Error matching clients.ErrNotFound, as a missing one.
func (c *Client) Get(ctx context.Context, org uuid.UUID, id string) (*pollsv1.Poll, error) {
	resp, err := clients.Call(ctx, c.Conn(), "GetPoll", clients.Idempotent, func(ctx context.Context) (*pollsv1.GetPollResponse, error) {
		return c.Stub.GetPoll(c.Conn().For(ctx, org), &pollsv1.GetPollRequest{Id: id})
	})
	return resp.GetPoll(), err
}
