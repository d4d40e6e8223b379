package server

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	orgsclient "github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/tenant"
)

// accessCache keeps membership answers in Redis for a short TTL, because the gateway asks on
// every request. Redis being down only costs a database read: every cache error falls through
// to the store.
//
// A change must never be undone by a reader that raced it (read the old level from the
// database, then cached it after the change deleted the key): a revoked user would keep access
// for the TTL. So each membership has a generation counter that a change bumps after it
// commits; a reader notes the generation before its database read and caches its answer only
// if the generation is still the same (one Lua script, atomic in Redis).
type accessCache struct {
	rdb *redis.Client
	ttl time.Duration
	log *slog.Logger
}

func accessKey(org uuid.UUID, user string) string {
	return "chorus:orgs:access:" + org.String() + ":" + user
}

func generationKey(org uuid.UUID, user string) string {
	return "chorus:orgs:access-gen:" + org.String() + ":" + user
}

// setIfGeneration caches ARGV[1] for ARGV[3] milliseconds when the generation still reads ARGV[2].
var setIfGeneration = redis.NewScript(`
if (redis.call("GET", KEYS[2]) or "0") == ARGV[2] then
  redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[3])
  return 1
end
return 0`)

// get returns the cached level and whether it was cached, and the membership's generation
// to hand to set after a database read.
func (c *accessCache) get(ctx context.Context, org uuid.UUID, user string) (tenant.Access, bool, string) {
	vals, err := c.rdb.MGet(ctx, accessKey(org, user), generationKey(org, user)).Result()
	if err != nil {
		c.log.WarnContext(ctx, "access cache read failed", "err", err)
		return tenant.AccessNone, false, ""
	}
	gen := "0"
	if g, ok := vals[1].(string); ok {
		gen = g
	}
	v, ok := vals[0].(string)
	if !ok {
		return tenant.AccessNone, false, gen
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return tenant.AccessNone, false, gen
	}
	return tenant.Access(n), true, gen
}

// set caches a level read from the database, unless the membership changed since gen was read.
func (c *accessCache) set(ctx context.Context, org uuid.UUID, user string, a tenant.Access, gen string) {
	if gen == "" {
		return // the generation could not be read: do not risk caching a stale answer
	}
	keys := []string{accessKey(org, user), generationKey(org, user)}
	if err := setIfGeneration.Run(ctx, c.rdb, keys, strconv.Itoa(int(a)), gen, c.ttl.Milliseconds()).Err(); err != nil {
		c.log.WarnContext(ctx, "access cache write failed", "err", err)
	}
}

// forget bumps the membership's generation, drops the cached answer and announces the change
// on orgsclient.AccessChannel (the gateways' in-process caches drop it on that message), in one
// MULTI. It tries a few times; when Redis still refuses, the caller must report the change as
// not yet effective, since a cached grant could otherwise outlive it by the TTL.
func (c *accessCache) forget(ctx context.Context, org uuid.UUID, user string) error {
	var err error
	for attempt, wait := 0, 50*time.Millisecond; attempt < 3; attempt, wait = attempt+1, wait*2 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("invalidate cached access: %w", ctx.Err())
			case <-time.After(wait):
			}
		}
		pipe := c.rdb.TxPipeline()
		pipe.Incr(ctx, generationKey(org, user))
		pipe.Del(ctx, accessKey(org, user))
		pipe.Publish(ctx, orgsclient.AccessChannel, orgsclient.AccessChange(org, user))
		if _, err = pipe.Exec(ctx); err == nil {
			return nil
		}
	}
	c.log.WarnContext(ctx, "access cache invalidation failed", "err", err)
	return fmt.Errorf("invalidate cached access: %w", err)
}
