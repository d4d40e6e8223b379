package gateway

import (
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// A caller well inside its budget takes several requests' worth of it from Redis at once
// (redis_rate's AllowAtMost) and this replica spends them locally, one per request, so most
// requests need no Redis round trip. What a lease holds is already spent in Redis, so no replica
// can let a caller past its limit. Near the limit the lease shrinks to one request, so the
// limit is met exactly where it matters; a lease left unspent lapses after leaseTTL, costing
// an idle caller a few requests of a budget it was far from using up.
const (
	leaseShare = 8  // a lease is at most 1/leaseShare of what Redis said remained
	maxLease   = 16 // nor more than this many requests
	leaseTTL   = time.Second
	maxLeases  = 10_000 // past this many keys, lapsed leases are dropped
)

// leases are the requests this replica holds, per rate-limit key.
type leases struct {
	mu sync.Mutex
	m  map[string]*lease
}

type lease struct {
	tokens    int       // taken from Redis, not yet spent here
	remaining int       // what Redis said remained after the take
	resetAt   time.Time // when the budget is whole again, as Redis said then
	until     time.Time // when the lease lapses
}

// take spends one leased request of key; nil when none is held.
func (ls *leases) take(key string, now time.Time) *redis_rate.Result {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.m[key]
	if l == nil || l.tokens == 0 || !now.Before(l.until) {
		return nil
	}
	l.tokens--
	return l.result(now)
}

// size is how many requests to ask Redis for: a share of what remained when it was last
// asked, within the last lease's life; one when nothing is known.
func (ls *leases) size(key string, now time.Time) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.m[key]
	if l == nil || !now.Before(l.until) {
		return 1
	}
	return min(max(l.remaining/leaseShare, 1), maxLease)
}

// keep records what Redis granted (res.Allowed requests, one of them spent by the request that
// asked) and returns that request's decision. A refusal forgets the key's lease.
func (ls *leases) keep(key string, res *redis_rate.Result, now time.Time) *redis_rate.Result {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if res.Allowed == 0 {
		delete(ls.m, key)
		return res
	}
	if ls.m == nil {
		ls.m = make(map[string]*lease)
	}
	l := ls.m[key]
	if l == nil || !now.Before(l.until) {
		if len(ls.m) >= maxLeases {
			ls.prune(now)
		}
		l = &lease{}
		ls.m[key] = l
	}
	l.tokens += res.Allowed - 1
	l.remaining, l.resetAt, l.until = res.Remaining, now.Add(res.ResetAfter), now.Add(leaseTTL)
	return l.result(now)
}

func (ls *leases) prune(now time.Time) {
	for k, l := range ls.m {
		if !now.Before(l.until) {
			delete(ls.m, k)
		}
	}
}

// result is an allowed request's decision: what remains counts the requests still leased here.
func (l *lease) result(now time.Time) *redis_rate.Result {
	return &redis_rate.Result{Allowed: 1, Remaining: l.remaining + l.tokens, RetryAfter: -1, ResetAfter: max(l.resetAt.Sub(now), 0)}
}
