package dispatch

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/chorus-sms/chorus/pkg/batch"
	"github.com/chorus-sms/chorus/pkg/wait"
)

// throttle paces each sending number at its own rate across every replica, as the carrier
// counts it: within any second of the carrier's clock, a number's messages arrive at most rate
// times.
//
// A number has rate send tokens, kept in Redis (a sorted set per number: token → the moment,
// in Redis' clock, it is free again). A send takes a token before it leaves and gives it back
// once the carrier has answered; the token is free again one second after that answer. So of
// any rate+1 consecutive sends, the last left more than a second after the first reached the
// carrier (the answer comes after the arrival), and no second of the carrier's clock holds
// rate+1 arrivals, whatever the network and scheduling jitter. A token is granted up to
// throttleLead before it is free, with that moment as its start: the message is
// consent-checked and claimed meanwhile and leaves at the start, so a number keeps its pace
// (each token's round is a second plus the carrier's answer time). A replica killed holding
// tokens loses them for tokenLease.
//
// In a process, one goroutine per number with waiting sends asks Redis for as many tokens as
// there are waiters, in one call, and hands them out in arrival order; tokens are given back in
// batches. So the Redis round trips grow with the numbers sending, not with the messages.
type throttle struct {
	rdb      *redis.Client
	prefix   string // this process's token names: unique, so a late give-back of a token whose lease ran out finds nothing
	seq      atomic.Uint64
	giveBack *batch.Batcher[token, struct{}]

	mu      sync.Mutex
	numbers map[string]*numberPacer
	lines   map[string]*line // the dispatch jobs admitted to each number's tokens (lines.go)
}

func newThrottle(rdb *redis.Client) *throttle {
	t := &throttle{rdb: rdb, prefix: uuid.NewString()[:8] + ":", numbers: map[string]*numberPacer{}, lines: map[string]*line{}}
	t.giveBack = batch.New(t.giveBackMany, batchMax, batchRuns, batchTimeout)
	return t
}

// throttleLead is how long before a token is free it may be granted: enough for the consent
// check and the claim, so that the message is ready to leave when its token frees.
const throttleLead = 100 * time.Millisecond

// tokenLease is how long a granted token stays taken when it is never given back (its process
// died): longer than any send (a dispatch job's timeout is a minute).
const tokenLease = 2 * time.Minute

// throttlePoll bounds how long a number's pacer sleeps while all its tokens are out with no
// known return: another replica's give-back is seen within this, long before its token frees
// (a second after the give-back), so the wait costs no pace.
const throttlePoll = 50 * time.Millisecond

// grantTokens grants KEYS[1]'s tokens to ARGV[4...] (names), at most ARGV[1] (the rate) taken
// at any moment. Free tokens start now; the tokens freeing within ARGV[2] µs are handed over
// with their free moment as start. Each granted token is taken for ARGV[3] µs after its start
// unless given back. It answers {µs to wait before asking again (0 when all were granted),
// tokens left free, name, µs from now until its start, its start (µs of Redis' clock), ...}.
var grantTokens = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local key, rate, lead, lease = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local taken = redis.call('ZCARD', key)
local out = {0, 0}
for i = 4, #ARGV do
	local start = now
	if taken >= rate then
		-- the token to start after is the (taken - rate + 1)th to free: those before it go too
		local first = redis.call('ZRANGE', key, 0, taken - rate, 'WITHSCORES')
		start = tonumber(first[#first])
		if start > now + lead then
			out[1] = start - lead - now
			break
		end
		for j = 1, #first, 2 do
			redis.call('ZREM', key, first[j])
		end
		taken = rate - 1
	end
	redis.call('ZADD', key, string.format('%.0f', start + lease), ARGV[i])
	taken = taken + 1
	table.insert(out, ARGV[i])
	table.insert(out, start - now)
	table.insert(out, start)
end
redis.call('PEXPIRE', key, math.floor((lead + lease) / 1000) + 1000)
out[2] = math.max(rate - taken, 0)
return out
`)

// returnTokens gives back KEYS[1]'s tokens ARGV[1], ARGV[3], ...: a token whose send reached
// the carrier (ARGV[i+1] = 0) frees a second from now; one never used frees at its start
// (ARGV[i+1], µs of Redis' clock). A token whose lease ran out (gone) stays gone.
var returnTokens = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i = 1, #ARGV, 2 do
	local free = tonumber(ARGV[i + 1])
	if free == 0 then free = now + 1000000 end
	redis.call('ZADD', KEYS[1], 'XX', 'LT', string.format('%.0f', free), ARGV[i])
end
return 0
`)

// token is one granted send of a number.
type token struct {
	number string
	name   string
	// start is when the send may leave, in this process' clock: never before the token's
	// free moment in Redis' clock (the answer's travel time makes it a little late).
	start time.Time
	// startRedis is the start in Redis' clock (µs), to free an unused token at it.
	startRedis int64
	// sent says the send reached (or may have reached) the carrier: the token frees a second
	// after it is given back.
	sent bool
}

// numberPacer is one number's queue of sends waiting for a token in this process.
type numberPacer struct {
	rate    int
	waiters []*tokenWaiter
	// polling says the pacer waits for a token still out; wake ends its wait when one is
	// given back here (and an unused one always: it may be free at once).
	polling bool
	wake    chan struct{}
}

type tokenWaiter struct {
	got chan tokenOrErr // buffered: the pacer never blocks on a waiter
}

type tokenOrErr struct {
	tok token
	err error
}

// key is a number's tokens; the slot pacing before tokens kept a string under ":pace:".
func (t *throttle) key(number string) string { return "chorus:messaging:tokens:" + number }

// acquire blocks until a token of number (sending rate messages per second) is granted, or ctx
// ends. The caller waits for its start (ready) before the send leaves and gives it back
// (release) once the carrier answered, or unused.
func (t *throttle) acquire(ctx context.Context, number string, rate int) (token, error) {
	w := &tokenWaiter{got: make(chan tokenOrErr, 1)}
	t.mu.Lock()
	p := t.numbers[number]
	if p == nil {
		p = &numberPacer{wake: make(chan struct{}, 1)}
		t.numbers[number] = p
		go t.pace(number, p)
	}
	p.rate = rate
	p.waiters = append(p.waiters, w)
	t.mu.Unlock()
	select {
	case r := <-w.got:
		return r.tok, r.err
	case <-ctx.Done():
	}
	t.mu.Lock()
	if i := slices.Index(p.waiters, w); i >= 0 {
		p.waiters = slices.Delete(p.waiters, i, i+1)
		t.mu.Unlock()
		return token{}, ctx.Err()
	}
	t.mu.Unlock()
	if r := <-w.got; r.err == nil { // granted as ctx ended
		t.release(context.WithoutCancel(ctx), r.tok)
	}
	return token{}, ctx.Err()
}

// maxGrant bounds the tokens asked for in one call.
const maxGrant = 500

// pace grants number's tokens to its waiters until none is left.
func (t *throttle) pace(number string, p *numberPacer) {
	ctx := context.Background()
	for {
		t.mu.Lock()
		n := min(len(p.waiters), maxGrant)
		if n == 0 {
			delete(t.numbers, number)
			t.mu.Unlock()
			return
		}
		rate := p.rate
		t.mu.Unlock()
		names := make([]any, 0, 3+n)
		names = append(names, rate, throttleLead.Microseconds(), tokenLease.Microseconds())
		for range n {
			names = append(names, t.prefix+strconv.FormatUint(t.seq.Add(1), 36))
		}
		res, err := grantTokens.Run(ctx, t.rdb, []string{t.key(number)}, names...).Slice()
		now := time.Now()
		grants, spare, retry, perr := parseGrants(number, res, now)
		if err == nil {
			err = perr
		}
		var unused []token
		t.mu.Lock()
		if err != nil {
			// Those asking learn it (a dispatch is retried); the others ask again.
			k := min(n, len(p.waiters))
			for _, w := range p.waiters[:k] {
				w.got <- tokenOrErr{err: fmt.Errorf("throttle %s: %w", number, err)}
			}
			p.waiters = p.waiters[k:]
		} else {
			t.noteSpare(number, spare, now)
			k := min(len(grants), len(p.waiters))
			for i, w := range p.waiters[:k] {
				w.got <- tokenOrErr{tok: grants[i]}
			}
			p.waiters = p.waiters[k:]
			unused = grants[k:] // their waiters left meanwhile
		}
		t.mu.Unlock()
		for _, tok := range unused {
			t.release(ctx, tok)
		}
		if err == nil && retry == 0 {
			continue
		}
		// Every token is taken (or Redis failed). The first to come within reach is known
		// when it was given back (it frees a second after); one still out may come back any
		// time, here (which wakes this loop) or at another replica (seen at the next poll).
		sleep := throttlePoll
		if err == nil && retry < time.Second {
			sleep = retry
		}
		t.mu.Lock()
		p.polling = sleep == throttlePoll
		t.mu.Unlock()
		timer := time.NewTimer(sleep)
		select {
		case <-timer.C:
		case <-p.wake:
			timer.Stop()
		}
	}
}

// parseGrants reads grantTokens' answer, received at now.
func parseGrants(number string, res []any, now time.Time) (grants []token, spare int, retry time.Duration, err error) {
	if len(res)%3 != 2 {
		return nil, 0, 0, fmt.Errorf("unexpected answer %v", res)
	}
	wait, ok1 := res[0].(int64)
	free, ok2 := res[1].(int64)
	if !ok1 || !ok2 {
		return nil, 0, 0, fmt.Errorf("unexpected answer %v", res)
	}
	for i := 2; i < len(res); i += 3 {
		name, ok1 := res[i].(string)
		in, ok2 := res[i+1].(int64)
		at, ok3 := res[i+2].(int64)
		if !ok1 || !ok2 || !ok3 {
			return nil, 0, 0, fmt.Errorf("unexpected answer %v", res)
		}
		grants = append(grants, token{number: number, name: name, start: now.Add(time.Duration(in) * time.Microsecond), startRedis: at})
	}
	return grants, int(free), time.Duration(wait) * time.Microsecond, nil
}

// ready waits for tok's start; false when ctx ended first (the token is then to be given back
// unused).
func (t *throttle) ready(ctx context.Context, tok token) bool {
	return wait.Until(ctx, tok.start)
}

// release gives tok back: sent says its message was handed to the carrier (or may have been),
// and the token frees a second from now; otherwise at its start.
func (t *throttle) release(ctx context.Context, tok token) {
	if _, err := t.giveBack.Do(ctx, tok); err != nil {
		// The token comes back when its lease runs out: a slower pace for a while, never a
		// faster one.
		return
	}
	t.mu.Lock()
	if p := t.numbers[tok.number]; p != nil && (p.polling || !tok.sent) {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	t.mu.Unlock()
}

// giveBackMany returns tokens in one pipeline, one script call per number.
func (t *throttle) giveBackMany(ctx context.Context, toks []token) ([]struct{}, error) {
	byNumber := map[string][]any{}
	for _, tok := range toks {
		free := int64(0)
		if !tok.sent {
			free = tok.startRedis
		}
		byNumber[tok.number] = append(byNumber[tok.number], tok.name, free)
	}
	pipe := t.rdb.Pipeline()
	for number, args := range byNumber {
		returnTokens.Eval(ctx, pipe, []string{t.key(number)}, args...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("give back send tokens: %w", err)
	}
	return make([]struct{}, len(toks)), nil
}
