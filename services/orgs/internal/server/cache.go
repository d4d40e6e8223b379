package server

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/chorus-sms/chorus/pkg/tenant"
)

// accessCache keeps membership answers in Redis for a short TTL, because the gateway asks on
// every request. Writes delete the key after they commit. Redis being down only costs a
// database read: every cache error falls through to the store.
type accessCache struct {
	rdb *redis.Client
	ttl time.Duration
	log *slog.Logger
}

func accessKey(org uuid.UUID, user string) string {
	return "chorus:orgs:access:" + org.String() + ":" + user
}

// get returns the cached level and whether it was cached.
func (c *accessCache) get(ctx context.Context, org uuid.UUID, user string) (tenant.Access, bool) {
	v, err := c.rdb.Get(ctx, accessKey(org, user)).Result()
	if err != nil {
		if !errors.Is(err, redis.Nil) {
			c.log.WarnContext(ctx, "access cache read failed", "err", err)
		}
		return tenant.AccessNone, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return tenant.AccessNone, false
	}
	return tenant.Access(n), true
}

func (c *accessCache) set(ctx context.Context, org uuid.UUID, user string, a tenant.Access) {
	if err := c.rdb.Set(ctx, accessKey(org, user), strconv.Itoa(int(a)), c.ttl).Err(); err != nil {
		c.log.WarnContext(ctx, "access cache write failed", "err", err)
	}
}

// forget drops the cached answer; on failure the TTL bounds how long a stale answer lives.
func (c *accessCache) forget(ctx context.Context, org uuid.UUID, user string) {
	if err := c.rdb.Del(ctx, accessKey(org, user)).Err(); err != nil {
		c.log.WarnContext(ctx, "access cache invalidation failed; stale until TTL", "err", err, "ttl", c.ttl)
	}
}
