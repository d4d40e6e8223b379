package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// throttle paces each sending number at its rate across every replica: the decision is made in
// Redis (GCRA), with a burst of one so that no calendar second grants more than the rate.
type throttle struct {
	limiter *redis_rate.Limiter
	limit   redis_rate.Limit
}

func newThrottle(rdb *redis.Client, perSecond int) *throttle {
	return &throttle{limiter: redis_rate.NewLimiter(rdb), limit: redis_rate.Limit{Rate: perSecond, Burst: 1, Period: time.Second}}
}

// wait blocks until number may send one message, or ctx ends, and returns when it was let go.
func (t *throttle) wait(ctx context.Context, number string) (time.Time, error) {
	for {
		res, err := t.limiter.Allow(ctx, "chorus:messaging:throttle:"+number, t.limit)
		if err != nil {
			return time.Time{}, fmt.Errorf("throttle %s: %w", number, err)
		}
		if res.Allowed > 0 {
			return time.Now(), nil
		}
		timer := time.NewTimer(res.RetryAfter)
		select {
		case <-ctx.Done():
			timer.Stop()
			return time.Time{}, ctx.Err()
		case <-timer.C:
		}
	}
}
