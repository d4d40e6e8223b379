package gateway

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/chorus-sms/chorus/pkg/apierr"
)

// Redis budget of one rate-limit decision, and how often a Redis outage is logged.
const (
	rateLimitTimeout  = 250 * time.Millisecond
	failOpenWarnEvery = time.Minute
)

// rateLimitRedisOptions bounds every Redis call by the caller's context and gives up at once
// instead of retrying or redialling: a slow decision costs every request that waits for it.
func rateLimitRedisOptions(o *redis.Options) *redis.Options {
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1
	o.DialerRetries = 1
	o.DialTimeout = rateLimitTimeout
	return o
}

// rateLimiter enforces a GCRA limit (redis_rate) per (organization, user), shared by every
// gateway replica through Redis. Over the limit a request answers 429 RATE_LIMITED with
// Retry-After; every decided request carries RateLimit-Limit (the burst), RateLimit-Remaining
// and RateLimit-Reset.
//
// When Redis does not answer within rateLimitTimeout the limiter FAILS OPEN: the request is
// served without a decision and without RateLimit-* headers, the fail-open counter
// (chorus_gateway_ratelimit_fail_open_total) goes up, and a warning is logged at most once per
// failOpenWarnEvery. The limit protects the services from a noisy tenant; it is not a security
// boundary (authentication and access checks still run), so losing it for the length of a
// Redis outage is better than refusing every tenant's traffic.
type rateLimiter struct {
	limiter   *redis_rate.Limiter
	limit     redis_rate.Limit
	failOpen  prometheus.Counter
	log       *slog.Logger
	lastWarn  atomic.Int64          // unix nanoseconds of the last fail-open warning
	refused   refusals              // keys refused lately: their reads wait for the decision
	leases    leases                // requests taken from Redis ahead, per key
	decisions chan *pendingDecision // to the decision workers (nil: none, a goroutine each)
}

func newRateLimiter(rdb *redis.Client, perSecond, burst int, m *metrics, log *slog.Logger) *rateLimiter {
	return &rateLimiter{
		limiter:  redis_rate.NewLimiter(rdb),
		limit:    redis_rate.Limit{Rate: perSecond, Burst: burst, Period: time.Second},
		failOpen: m.failOpen,
		log:      log,
	}
}

func rateLimitKey(org uuid.UUID, user string) string {
	return "chorus:gateway:" + org.String() + ":" + user
}

// leased spends one request of key's budget this replica holds (see leases); nil when it
// holds none and Redis must decide.
func (l *rateLimiter) leased(key string) *redis_rate.Result {
	return l.leases.take(key, time.Now())
}

// decide spends one request of the budget of key (rateLimitKey), from a lease when one is
// held, otherwise from Redis (taking a new lease). It returns nil when Redis did not answer in
// time (fail open) or the client went away.
func (l *rateLimiter) decide(ctx context.Context, key string) *redis_rate.Result {
	now := time.Now()
	if res := l.leases.take(key, now); res != nil {
		return res
	}
	rctx, cancel := context.WithTimeout(ctx, rateLimitTimeout)
	defer cancel()
	res, err := l.limiter.AllowAtMost(rctx, key, l.limit, l.leases.size(key, now))
	if err != nil {
		if ctx.Err() == nil { // not the client going away
			l.failOpen.Inc()
			l.warnFailOpen(ctx, err)
		}
		return nil
	}
	if res.Allowed == 0 {
		l.refused.add(key, time.Now().Add(res.RetryAfter))
	}
	return l.leases.keep(key, res, now)
}

// apply writes the RateLimit-* headers of a decision, and the 429 when the budget is spent;
// it returns false when the request must stop. A nil decision (fail open) lets it through.
func (l *rateLimiter) apply(w http.ResponseWriter, r *http.Request, res *redis_rate.Result) bool {
	if res == nil {
		return true
	}
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(l.limit.Burst))
	h.Set("RateLimit-Remaining", strconv.Itoa(res.Remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(res.ResetAfter.Seconds()))))
	if res.Allowed == 0 {
		writeError(w, r, apiError{
			Status: http.StatusTooManyRequests, Code: apierr.ReasonRateLimited,
			Message: "rate limit exceeded", RetryAfter: res.RetryAfter,
		})
		return false
	}
	return true
}

func (l *rateLimiter) warnFailOpen(ctx context.Context, err error) {
	now := time.Now().UnixNano()
	last := l.lastWarn.Load()
	if last != 0 && now-last < int64(failOpenWarnEvery) {
		return
	}
	if l.lastWarn.CompareAndSwap(last, now) {
		l.log.WarnContext(ctx, "rate limiter unreachable; serving requests without a limit (fail open)",
			"err", err, "next_warning_after", failOpenWarnEvery.String())
	}
}
