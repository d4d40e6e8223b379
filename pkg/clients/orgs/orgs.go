// Package orgs is the typed client of the orgs service: organization settings (cached, as
// every message needs them and they rarely change) and membership checks.
package orgs

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/tenant"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// DefaultTTL bounds how stale a cached organization may be.
const DefaultTTL = 30 * time.Second

// Client calls the orgs service.
type Client struct {
	clients.Client[orgsv1.OrgsServiceClient]
	// TTL is how long an organization is served from the cache.
	TTL time.Duration

	mu    sync.Mutex
	cache map[uuid.UUID]cached
}

type cached struct {
	org *orgsv1.Organization
	at  time.Time
}

// New returns a client over conn.
func New(conn *clients.Conn) *Client {
	return &Client{Client: clients.NewClient(conn, orgsv1.NewOrgsServiceClient), TTL: DefaultTTL, cache: map[uuid.UUID]cached{}}
}

// Dial connects lazily to the orgs service at addr on behalf of caller.
func Dial(addr, caller string) (*Client, error) {
	conn, err := clients.Dial("orgs", addr, caller)
	if err != nil {
		return nil, err
	}
	return New(conn), nil
}

// Organization returns an organization's settings, from the cache when fresh. A missing
// organization is a *clients.Error matching clients.ErrNotFound.
func (c *Client) Organization(ctx context.Context, id uuid.UUID) (*orgsv1.Organization, error) {
	c.mu.Lock()
	e, ok := c.cache[id]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.TTL {
		return e.org, nil
	}
	resp, err := clients.Call(ctx, c.Conn(), "GetOrganization", clients.Idempotent, func(ctx context.Context) (*orgsv1.GetOrganizationResponse, error) {
		return c.Stub.GetOrganization(c.Conn().For(ctx, id), &orgsv1.GetOrganizationRequest{Id: id.String()})
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.cache[id] = cached{org: resp.GetOrganization(), at: time.Now()}
	c.mu.Unlock()
	return resp.GetOrganization(), nil
}

// Access returns user's level in org (tenant.AccessNone when not a member).
func (c *Client) Access(ctx context.Context, org uuid.UUID, user string) (tenant.Access, error) {
	resp, err := clients.Call(ctx, c.Conn(), "CheckAccess", clients.Idempotent, func(ctx context.Context) (*orgsv1.CheckAccessResponse, error) {
		return c.Stub.CheckAccess(ctx, &orgsv1.CheckAccessRequest{OrganizationId: org.String(), UserSubject: user})
	})
	if err != nil {
		return tenant.AccessNone, err
	}
	// orgsv1.Access and tenant.Access share their numbering (the orgs service converts the same way).
	return tenant.Access(resp.GetAccess()), nil
}
