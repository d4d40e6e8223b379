package dispatch

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chorus-sms/chorus/pkg/wait"
)

// throttle paces each sending number at its own rate across every replica. The decision is
// made in Redis: each number has a next free send slot, and a grant takes that slot and moves
// it one spacing on, so a number's grants are never closer than 1/rate apart and no second,
// wherever it starts, holds more than rate of them. A grant may be for a slot a little ahead
// (up to throttleLead): the message is consent-checked and claimed meanwhile and handed to the
// carrier at its slot, so the carrier sees the spacing, not the jitter of those steps. In this
// process a number's sends are also counted as they leave (await): never more than its rate
// within a window of a second.
type throttle struct {
	rdb *redis.Client

	mu   sync.Mutex
	logs map[string]*sendLog // by number
}

func newThrottle(rdb *redis.Client) *throttle {
	return &throttle{rdb: rdb, logs: map[string]*sendLog{}}
}

// pacingSlack stretches each spacing by this fraction, so that the few milliseconds a send
// can take between its slot and the carrier do not let the carrier count rate+1 in one of its
// seconds: a number sends at 99.5% of its rate.
const pacingSlack = 0.005

// throttleLead is how far ahead of now a slot may be granted: enough for the consent check and
// the claim, and for a waiting worker that wakes late to still take its number's next slot
// before it passes (a slot nobody took in time is lost: rates are not banked).
const throttleLead = 100 * time.Millisecond

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
		if !wait.For(ctx, in) {
			return time.Time{}, ctx.Err()
		}
	}
}

// window is the span in which a number may send at most its rate, as this process counts its
// sends when they leave: a second, and the few milliseconds a send can take between leaving
// and reaching the carrier.
const window = time.Second + 5*time.Millisecond

// sendLog holds when a number's last rate sends left this process, oldest at next.
type sendLog struct {
	left []int64 // UnixNano, a ring of rate entries
	next int
}

// await blocks until a message of number granted slot may go, or ctx ends (false): at its
// slot, and not before the number's send rate sends back left a window ago, counted when each
// send actually leaves. A send that woke late (a busy machine) thus never lets rate+1 sends
// reach the carrier within a second, while the ones after it may catch up instead of
// inheriting its delay. It records this send as leaving now.
func (t *throttle) await(ctx context.Context, number string, slot time.Time, rate int) bool {
	for {
		t.mu.Lock()
		l := t.logs[number]
		if l == nil || len(l.left) != rate {
			l = &sendLog{left: make([]int64, rate)}
			t.logs[number] = l
		}
		at := slot
		if free := time.Unix(0, l.left[l.next]).Add(window); free.After(at) {
			at = free
		}
		if now := time.Now(); !now.Before(at) {
			l.left[l.next] = now.UnixNano()
			l.next = (l.next + 1) % rate
			t.mu.Unlock()
			return true
		}
		t.mu.Unlock()
		if !wait.Until(ctx, at) {
			return false
		}
	}
}
