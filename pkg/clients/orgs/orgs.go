// Package orgs is the typed client of the orgs service: organization settings (cached, as
// every message needs them and they rarely change) and membership checks.
package orgs

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/tenant"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// DefaultTTL bounds how stale a cached organization may be: a change whose announcement
// (OrganizationChannel) was lost, or made while a client was not following, is seen within it.
const DefaultTTL = 30 * time.Second

// OrganizationChannel is the Redis pub/sub channel on which the orgs service announces each
// change of an organization (its settings), after it commits, as the organization's id: a
// client that follows it (Follow) drops its copy at once, so the next message sent applies
// the change.
const OrganizationChannel = "chorus:orgs:organization-changed"

// orgPingEvery paces the PINGs that tell a silent OrganizationChannel subscription from a
// lost one (subscribe); a lost one is replaced within a few of them.
const orgPingEvery = time.Second

// Client calls the orgs service.
type Client struct {
	clients.Client[orgsv1.OrgsServiceClient]
	// TTL is how long an organization is served from the cache.
	TTL time.Duration

	mu    sync.Mutex
	gen   uint64 // bumped by every announced change, so a read that raced one does not store
	cache map[uuid.UUID]cached
	live  atomic.Bool // following OrganizationChannel
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
	gen := c.gen
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
	if c.gen == gen {
		c.cache[id] = cached{org: resp.GetOrganization(), at: time.Now()}
	}
	c.mu.Unlock()
	return resp.GetOrganization(), nil
}

// Follow drops a cached organization as soon as the orgs service announces it changed
// (OrganizationChannel on rdb), until ctx ends; it subscribes again after any failure,
// dropping every organization, as changes may have been missed meanwhile.
func (c *Client) Follow(ctx context.Context, rdb *redis.Client, log *slog.Logger) {
	follow(ctx, log, "organization change subscription lost; cached settings may lag a change by up to the cache's TTL until it is back",
		func(ctx context.Context) error {
			return subscribe(ctx, rdb, OrganizationChannel, orgPingEvery, func() time.Duration { return 0 }, c.handle)
		},
		func() bool {
			c.forget(uuid.Nil)
			return c.live.Swap(false)
		})
}

// handle applies one message of the OrganizationChannel subscription.
func (c *Client) handle(msg any) {
	switch m := msg.(type) {
	case *redis.Subscription: // (re)subscribed: whatever was published before is unknown
		c.forget(uuid.Nil)
		c.live.Store(true)
	case *redis.Message:
		id, err := uuid.Parse(m.Payload)
		if err != nil {
			id = uuid.Nil
		}
		c.forget(id)
	}
}

// forget drops organization id from the cache, every organization for uuid.Nil.
func (c *Client) forget(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if id == uuid.Nil {
		clear(c.cache)
	} else {
		delete(c.cache, id)
	}
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
