package gateway

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/redistest"
)

// scriptCalls counts the rate-limit scripts a client runs in Redis.
type scriptCalls struct{ n atomic.Int64 }

func (*scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (*scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// hourlyLimiter is a replica's limiter of burst requests an hour over rdb: nothing refills
// while a test runs, whatever the machine's speed.
func hourlyLimiter(rdb *redis.Client, burst int) *rateLimiter {
	return &rateLimiter{
		limiter:  redis_rate.NewLimiter(rdb),
		limit:    redis_rate.Limit{Rate: burst, Burst: burst, Period: time.Hour},
		failOpen: prometheus.NewCounter(prometheus.CounterOpts{Name: "fail_open"}),
		log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// A caller's budget is spent to the last request, with RateLimit-Remaining exact at every
// step and the request after it refused, while Redis is asked for a fraction of the requests.
func TestLeasedBudgetIsExactWithFewerRedisCalls(t *testing.T) {
	t.Parallel()
	_, rdb := redistest.New(t)
	calls := &scriptCalls{}
	rdb.AddHook(calls)
	l := hourlyLimiter(rdb, 100)
	ctx := context.Background()
	for i := range 100 {
		res := l.decide(ctx, "k")
		require.NotNil(t, res)
		require.Equal(t, 1, res.Allowed, "request %d", i+1)
		assert.Equal(t, 99-i, res.Remaining, "request %d", i+1)
	}
	res := l.decide(ctx, "k")
	require.NotNil(t, res)
	assert.Equal(t, 0, res.Allowed, "the 101st request of a budget of 100")
	assert.Positive(t, res.RetryAfter)
	assert.Less(t, calls.n.Load(), int64(50), "Redis decided %d of 101 requests", calls.n.Load())
}

// Two replicas serving one caller in turn admit exactly the budget between them: what one
// holds was taken from Redis, so the other cannot admit it too, and nothing is left unspent.
func TestReplicasShareOneBudget(t *testing.T) {
	t.Parallel()
	_, rdb := redistest.New(t)
	replicas := []*rateLimiter{hourlyLimiter(rdb, 100), hourlyLimiter(rdb, 100)}
	ctx := context.Background()
	admitted, refused := 0, 0
	for i := 0; refused < 2*len(replicas); i++ {
		res := replicas[i%len(replicas)].decide(ctx, "k")
		require.NotNil(t, res)
		if res.Allowed == 1 {
			admitted++
			continue
		}
		refused++
	}
	assert.Equal(t, 100, admitted)
}

// A lease lapses: requests it still held are not spent after leaseTTL, and the next lease is
// sized afresh.
func TestLeaseLapses(t *testing.T) {
	t.Parallel()
	var ls leases
	now := time.Now()
	res := ls.keep("k", &redis_rate.Result{Allowed: 5, Remaining: 80, ResetAfter: time.Minute}, now)
	assert.Equal(t, 84, res.Remaining, "what Redis has left and the four requests held here")
	assert.Equal(t, 10, ls.size("k", now))
	require.NotNil(t, ls.take("k", now.Add(leaseTTL/2)))
	assert.Nil(t, ls.take("k", now.Add(leaseTTL)))
	assert.Equal(t, 1, ls.size("k", now.Add(leaseTTL)))
}
