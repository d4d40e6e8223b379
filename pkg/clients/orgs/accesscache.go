package orgs

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/chorus-sms/chorus/pkg/tenant"
)

// AccessChannel is the Redis pub/sub channel on which the orgs service announces each
// membership change, after it commits, as AccessChange(org, user).
const AccessChannel = "chorus:orgs:access-changed"

// AccessChange is the AccessChannel message for a change of user's membership in org.
func AccessChange(org uuid.UUID, user string) string { return org.String() + ":" + user }

// Bounds of the in-process access cache. A Redis PING goes down the subscription's own
// connection every accessPingEvery; its answer proves every change published before it was
// sent has been applied, because Redis answers in order on one connection. Entries are served
// only while the newest such proof is younger than accessMaxLag, so a lost, stalled or not yet
// confirmed subscription makes every check go to the orgs service instead: a revoked or
// lowered membership is never served for more than about accessMaxLag after it changed.
// Entries also live at most accessEntryTTL, so a change whose announcement was lost (the orgs
// service failed to publish it) is still picked up within a second. An entry served when older
// than accessRefreshAfter is checked again in the background, stamped with the time that check
// started, so a user who keeps calling does not wait on orgs once a second; a check announced
// changed while it ran is dropped, as any is. The refresh comes late in the entry's life, so
// a hot user costs orgs little more than the one check a second it cost before.
const (
	accessPingEvery      = 200 * time.Millisecond
	accessMaxLag         = 700 * time.Millisecond
	accessEntryTTL       = time.Second
	accessRefreshAfter   = accessEntryTTL * 4 / 5
	accessRefreshTimeout = 5 * time.Second
	accessMaxEntries     = 100_000
)

// AccessCache answers membership checks in process, in front of Client.Access: the gateway
// checks on every request, and a gRPC round trip to orgs (plus its Redis read) cost more than
// the request's own query. Changes reach it through AccessChannel; Run must be running for it
// to serve anything from memory.
type AccessCache struct {
	client *Client
	rdb    *redis.Client
	log    *slog.Logger
	start  time.Time

	proven atomic.Int64 // monotonic ns (since start) when the newest answered PING was sent; 0: none

	mu         sync.Mutex
	gen        uint64 // bumped by every invalidation, so a check that raced one does not store
	entries    map[accessKey]accessEntry
	refreshing map[accessKey]bool // background checks under way
}

type accessKey struct {
	org  uuid.UUID
	user string
}

type accessEntry struct {
	level tenant.Access
	at    time.Duration // since start
}

// NewAccessCache caches client's answers, invalidated by messages read from rdb.
func NewAccessCache(client *Client, rdb *redis.Client, log *slog.Logger) *AccessCache {
	return &AccessCache{client: client, rdb: rdb, log: log, start: time.Now(), entries: map[accessKey]accessEntry{}, refreshing: map[accessKey]bool{}}
}

func (c *AccessCache) now() time.Duration { return time.Since(c.start) }

// Access returns user's level in org: from memory while the subscription is proven current,
// else from the orgs service.
func (c *AccessCache) Access(ctx context.Context, org uuid.UUID, user string) (tenant.Access, error) {
	k := accessKey{org: org, user: user}
	now := c.now()
	live := now-time.Duration(c.proven.Load()) < accessMaxLag && c.proven.Load() != 0
	c.mu.Lock()
	e, ok := c.entries[k]
	gen := c.gen
	fresh := live && ok && now-e.at < accessEntryTTL
	refresh := fresh && now-e.at >= accessRefreshAfter && !c.refreshing[k]
	if refresh {
		c.refreshing[k] = true
	}
	c.mu.Unlock()
	if fresh {
		if refresh {
			go c.refresh(context.WithoutCancel(ctx), k, gen, now)
		}
		return e.level, nil
	}
	level, err := c.client.Access(ctx, org, user)
	if err != nil {
		return level, err
	}
	c.store(k, gen, accessEntry{level: level, at: now})
	return level, nil
}

// refresh checks k again for an entry about to expire; the answer is stamped at, when the
// check started.
func (c *AccessCache) refresh(ctx context.Context, k accessKey, gen uint64, at time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, accessRefreshTimeout)
	defer cancel()
	level, err := c.client.Access(ctx, k.org, k.user)
	c.mu.Lock()
	delete(c.refreshing, k)
	c.mu.Unlock()
	if err == nil {
		c.store(k, gen, accessEntry{level: level, at: at})
	}
}

// store keeps e unless a change was announced since gen was read, or a newer check is kept.
func (c *AccessCache) store(k accessKey, gen uint64, e accessEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.entries[k]; c.gen != gen || ok && cur.at > e.at {
		return
	}
	if len(c.entries) >= accessMaxEntries {
		clear(c.entries)
	}
	c.entries[k] = e
}

func (c *AccessCache) forget(k accessKey) {
	c.mu.Lock()
	c.gen++
	delete(c.entries, k)
	c.mu.Unlock()
}

func (c *AccessCache) forgetAll() {
	c.mu.Lock()
	c.gen++
	clear(c.entries)
	c.mu.Unlock()
}

// Run follows AccessChannel until ctx ends, subscribing again after any failure (and
// forgetting everything, as changes may have been missed meanwhile).
func (c *AccessCache) Run(ctx context.Context) {
	follow(ctx, c.log, "membership change subscription lost; checking every request with orgs until it is back",
		func(ctx context.Context) error {
			return subscribe(ctx, c.rdb, AccessChannel, accessPingEvery, c.now, c.handle)
		},
		func() bool {
			wasLive := c.proven.Swap(0) != 0
			c.forgetAll()
			return wasLive
		})
}

// handle applies one message of the AccessChannel subscription.
func (c *AccessCache) handle(msg any) {
	switch m := msg.(type) {
	case *redis.Subscription:
		// (Re)subscribed: whatever was published before is unknown.
		c.proven.Store(0)
		c.forgetAll()
	case *redis.Message:
		if k, ok := parseAccessChange(m.Payload); ok {
			c.forget(k)
		} else {
			c.forgetAll()
		}
	case *redis.Pong:
		if sent, err := strconv.ParseInt(m.Payload, 10, 64); err == nil && sent > c.proven.Load() {
			c.proven.Store(sent)
		}
	}
}

func parseAccessChange(s string) (accessKey, bool) {
	if len(s) < 37 || s[36] != ':' {
		return accessKey{}, false
	}
	org, err := uuid.Parse(s[:36])
	if err != nil {
		return accessKey{}, false
	}
	return accessKey{org: org, user: s[37:]}, true
}
