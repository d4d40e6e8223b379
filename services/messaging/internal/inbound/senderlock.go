package inbound

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// senderLocks serialize the messages of one sender to one organization across replicas, so a
// STOP and a START are applied one after the other, each stamped after the one before. Waiters
// are not queued: of two messages waiting behind a third, either may go first (messages a
// carrier delivers at once for one sender are rare; a fair queue would fix it). The lock is a
// Redis key, not a database lock: contacts is called while it is held, and a pooled
// connection must not wait on another service. It expires if its holder dies.
type senderLocks struct {
	rdb *redis.Client
	// ttl outlives the calls made under the lock (each bounded by the request's deadline).
	ttl time.Duration
	// wait bounds how long a message waits for the one before it; then the carrier retries.
	wait time.Duration
}

// poll is how often a waiting message tries the lock again.
const poll = 5 * time.Millisecond

// release deletes the key only if it still holds this holder's token.
var release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// lock takes the lock of (org, sender) and returns its release.
func (l senderLocks) lock(ctx context.Context, org uuid.UUID, sender string) (unlock func(), err error) {
	key := "messaging:inbound:" + org.String() + ":" + sender
	token := uuid.NewString()
	deadline := time.Now().Add(l.wait)
	for {
		ok, err := l.rdb.SetNX(ctx, key, token, l.ttl).Result()
		if err != nil {
			return nil, fmt.Errorf("lock sender: %w", err)
		}
		if ok {
			return func() {
				// Released even when the request was cancelled, or the next message waits out the TTL.
				_ = release.Run(context.WithoutCancel(ctx), l.rdb, []string{key}, token).Err()
			}, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock sender: still held after %s", l.wait)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock sender: %w", ctx.Err())
		case <-time.After(poll):
		}
	}
}
