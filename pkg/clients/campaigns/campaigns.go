// Package campaigns is the typed client of the campaigns service, for the services that show
// a campaign as the API does (webhooks' campaign.completed).
package campaigns

import (
	"context"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/clients"
	campaignsv1 "github.com/chorus-sms/chorus/proto/gen/go/campaigns/v1"
)

// Client calls the campaigns service.
type Client struct {
	clients.Client[campaignsv1.CampaignsServiceClient]
}

// New returns a client over conn.
func New(conn *clients.Conn) *Client {
	return &Client{Client: clients.NewClient(conn, campaignsv1.NewCampaignsServiceClient)}
}

// Get returns org's campaign id as GET /api/campaigns/{id} shows it. Another organization's
// campaign is a *clients.Error matching clients.ErrNotFound, as a missing one.
func (c *Client) Get(ctx context.Context, org uuid.UUID, id string) (*campaignsv1.Campaign, error) {
	resp, err := clients.Call(ctx, c.Conn(), "GetCampaign", clients.Idempotent, func(ctx context.Context) (*campaignsv1.GetCampaignResponse, error) {
		return c.Stub.GetCampaign(c.Conn().For(ctx, org), &campaignsv1.GetCampaignRequest{Id: id})
	})
	return resp.GetCampaign(), err
}
