package dispatch

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// throttle paces each sending number at its own rate across every replica. The decision is
// made in Redis: each number has a next free send slot, and a grant takes that slot and moves
// it one spacing on, so a number's grants are never closer than 1/rate apart and no second,
// wherever it starts, holds more than rate of them. A grant may be for a slot a little ahead
// (up to throttleLead): the message is consent-checked and claimed meanwhile and handed to the
// carrier at its slot, so the carrier sees the spacing, not the jitter of those steps. In this
// process a number's sends are also kept one spacing apart on the local clock (sendAt): a send
// that left late (its steps took longer than the lead) pushes the next one back instead of
// letting the two reach the carrier closer than the rate allows.
type throttle struct {
	rdb *redis.Client

	mu   sync.Mutex
	last map[string]time.Time // by number: when this process last let it send
}

func newThrottle(rdb *redis.Client) *throttle {
	return &throttle{rdb: rdb, last: map[string]time.Time{}}
}

// pacingSlack stretches each spacing by this fraction, so that the few milliseconds a send
// can take between its slot and the carrier do not let the carrier count rate+1 in one of its
// seconds: a number sends at 99.5% of its rate.
const pacingSlack = 0.005

// throttleLead is how far ahead of now a slot may be granted.
const throttleLead = 25 * time.Millisecond

// reserveSlot takes KEYS[1]'s next slot (µs of Redis' clock) when it lies within ARGV[2] µs
// from now and moves it ARGV[1] µs on; it answers {1, µs until the slot} or, when the next slot
// is further ahead, {0, µs to wait before asking again}.
var reserveSlot = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < now then slot = now end
local ahead = slot - now
local lead = tonumber(ARGV[2])
if ahead > lead then
	return {0, ahead - lead}
end
local spacing = tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%.0f', slot + spacing), 'PX', math.floor((ahead + spacing) / 1000) + 1000)
return {1, ahead}
`)

// spacing is the time between two grants of a number sending rate messages per second.
func spacing(rate int) time.Duration {
	return time.Duration(math.Ceil(float64(time.Second)*(1+pacingSlack)/float64(rate)/float64(time.Microsecond))) * time.Microsecond
}

// reserve blocks until number, sending rate messages per second, is granted a slot, or ctx
// ends, and returns when the slot is (in this process' clock; at most throttleLead ahead).
func (t *throttle) reserve(ctx context.Context, number string, rate int) (time.Time, error) {
	key := []string{"chorus:messaging:pace:" + number}
	args := []any{spacing(rate).Microseconds(), throttleLead.Microseconds()}
	for {
		res, err := reserveSlot.Run(ctx, t.rdb, key, args...).Int64Slice()
		if err != nil {
			return time.Time{}, fmt.Errorf("throttle %s: %w", number, err)
		}
		in := time.Duration(res[1]) * time.Microsecond
		if res[0] == 1 {
			return time.Now().Add(in), nil
		}
		timer := time.NewTimer(in)
		select {
		case <-ctx.Done():
			timer.Stop()
			return time.Time{}, ctx.Err()
		case <-timer.C:
		}
	}
}

// sendAt is when a message of number granted slot may go: at its slot, and no sooner than one
// spacing after the number's previous send from this process.
func (t *throttle) sendAt(number string, slot time.Time, rate int) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := slot
	if next := t.last[number].Add(spacing(rate)); next.After(at) {
		at = next
	}
	if now := time.Now(); at.Before(now) {
		at = now
	}
	t.last[number] = at
	return at
}

// sleepUntil waits until at, or ctx ends (false).
func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
