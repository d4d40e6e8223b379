package gateway

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// A read's rate-limit decision is taken while the read runs instead of before it: the Redis
// round trip then costs a GET nothing, where it used to come before the service call. The
// answer is held back until the decision is in: allowed, it leaves with its RateLimit-*
// headers; refused, the read is canceled and its answer replaced by the 429, so the caller sees
// exactly what a decision taken first would have shown. Only reads overlap (a refused read has
// done nothing), and only for callers not known to be over their limit: once refused, a caller's
// requests wait for their decision again until the refusal's Retry-After has passed, so a
// tenant over its limit reaches the services once per refusal at most, not once per request.

// refusals remembers, per rate-limit key, until when its last refusal holds.
type refusals struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// maxRefusals bounds the memory of refusals; past it, lapsed entries are dropped.
const maxRefusals = 10_000

func (f *refusals) refused(key string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.until[key]
	if ok && !now.Before(t) {
		delete(f.until, key)
		return false
	}
	return ok
}

func (f *refusals) add(key string, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.until == nil {
		f.until = make(map[string]time.Time)
	}
	if len(f.until) >= maxRefusals {
		now := time.Now()
		for k, t := range f.until {
			if !now.Before(t) {
				delete(f.until, k)
			}
		}
	}
	f.until[key] = until
}

// pendingDecision is a rate-limit decision being taken in the background.
type pendingDecision struct {
	ctx    context.Context
	key    string
	cancel context.CancelFunc // called when it refuses, so the read running meanwhile stops early
	done   chan struct{}
	res    *redis_rate.Result
}

// decisionWorkers take reads' decisions. A goroutine started per decision grew its stack
// through the Redis client's calls on every request; a worker keeps its stack. A decision
// arriving while every worker is busy gets a goroutine of its own, so none waits for a worker.
const decisionWorkers = 8

// startDecisions runs the decision workers until ctx ends.
func (l *rateLimiter) startDecisions(ctx context.Context) {
	l.decisions = make(chan *pendingDecision)
	for range decisionWorkers {
		go func() {
			for {
				select {
				case p := <-l.decisions:
					l.finish(p)
				case <-ctx.Done():
					return
				}
			}
		}()
	}
}

// decideAsync starts the decision for key.
func (l *rateLimiter) decideAsync(ctx context.Context, key string, cancel context.CancelFunc) *pendingDecision {
	p := &pendingDecision{ctx: ctx, key: key, cancel: cancel, done: make(chan struct{})}
	select {
	case l.decisions <- p:
	default:
		go l.finish(p)
	}
	return p
}

func (l *rateLimiter) finish(p *pendingDecision) {
	defer close(p.done)
	p.res = l.decide(p.ctx, p.key)
	if p.res != nil && p.res.Allowed == 0 {
		p.cancel()
	}
}

// gatedWriter holds a response back until its rate-limit decision is in, then writes the
// decision's headers and the response, or the 429 in its place.
type gatedWriter struct {
	http.ResponseWriter
	r       *http.Request
	limiter *rateLimiter
	pending *pendingDecision
	decided bool
	swallow bool // refused: the handler's own answer is dropped
}

// open waits for the decision the first time the handler writes; it reports whether the
// handler's output may pass.
func (g *gatedWriter) open() bool {
	if !g.decided {
		g.decided = true
		<-g.pending.done
		g.swallow = !g.limiter.apply(g.ResponseWriter, g.r, g.pending.res)
	}
	return !g.swallow
}

func (g *gatedWriter) WriteHeader(code int) {
	if g.open() {
		g.ResponseWriter.WriteHeader(code)
	}
}

func (g *gatedWriter) Write(b []byte) (int, error) {
	if !g.open() {
		return len(b), nil
	}
	return g.ResponseWriter.Write(b)
}

// Flush passes through for streamed answers (the export), once the decision allows them.
func (g *gatedWriter) Flush() {
	if g.open() {
		if f, ok := g.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (g *gatedWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// overlapRead serves a read with its rate-limit decision taken alongside (see above).
func (l *rateLimiter) overlapRead(w http.ResponseWriter, r *http.Request, key string, serve func(http.ResponseWriter, *http.Request)) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	g := &gatedWriter{ResponseWriter: w, r: r, limiter: l, pending: l.decideAsync(r.Context(), key, cancel)}
	serve(g, r.WithContext(ctx))
	g.open() // a handler that wrote nothing still owes the decision its headers or 429
}
