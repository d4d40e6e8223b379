package dispatch

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// A saturated number (no free token at its last grant) admits a quarter of a second of its
// rate into its throttle, and one more; the jobs after are booked a slot each, one every
// 1/rate seconds after those ahead, and come back a little before it (or, River scheduling a
// long snooze up to 5 s late, that much earlier again). A number with free tokens admits
// them too, and one whose last grant is a second old is taken to have all its tokens free.
func TestLineAdmitsWhatTheTokensServeAndBooksTheRest(t *testing.T) {
	th := newThrottle(nil)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	require.True(t, th.enter("+1", 10, time.Time{}, now).IsZero())
	th.mu.Lock()
	th.noteSpare("+1", 0, now)
	th.mu.Unlock()
	for range 3 { // 10/s: 3 + 1
		require.True(t, th.enter("+1", 10, time.Time{}, now).IsZero())
	}
	var slots []time.Time
	for range 3 {
		slots = append(slots, th.enter("+1", 10, time.Time{}, now))
	}
	ms := func(n int) time.Time { return now.Add(time.Duration(n) * time.Millisecond) }
	assert.Equal(t, []time.Time{ms(400), ms(500), ms(600)}, slots)
	assert.Equal(t, 250*time.Millisecond, comeBackIn(slots[0], now))
	assert.Equal(t, 20*time.Second-comeBackEarly-schedulerLag, comeBackIn(now.Add(20*time.Second), now), "a long wait comes back early")

	// Two admitted jobs got their tokens: the line has room, but a new job still waits behind
	// the booked slots, while a booked job coming back for its slot goes in.
	th.leave("+1", now)
	th.leave("+1", now)
	assert.Equal(t, ms(700), th.enter("+1", 10, time.Time{}, now))
	assert.True(t, th.enter("+1", 10, slots[0], ms(300)).IsZero())

	// A booked job back early keeps its slot; one back to a full line books again at the end.
	assert.Equal(t, slots[2], th.enter("+1", 10, slots[2], now))
	assert.True(t, th.enter("+1", 10, slots[1], ms(300)).IsZero())
	assert.Equal(t, ms(800), th.enter("+1", 10, slots[2], ms(300)), "after the four waiting and the booked slots")

	// A number with free tokens admits as many more; its last grant a second old, all of them.
	require.True(t, th.enter("+2", 1000, time.Time{}, now).IsZero())
	th.mu.Lock()
	th.noteSpare("+2", 600, now)
	th.mu.Unlock()
	admitted := 1
	for th.enter("+2", 1000, time.Time{}, now).IsZero() {
		admitted++
	}
	assert.Equal(t, 600+250+1, admitted)
	for th.enter("+2", 1000, time.Time{}, ms(1000)).IsZero() {
		admitted++
	}
	assert.Equal(t, 1000+250+1, admitted)
}

// A slow number's backlog does not take every worker: with 4 workers, a 1/s number's twelve
// queued messages ahead of another number's three, the other number's are sent within a
// couple of seconds, and the slow number still sends at its rate.
func TestSlowNumberDoesNotHoldUpAnother(t *testing.T) {
	f := newFixture(t)
	tw, live := newTwilio(t)
	ctx := t.Context()
	f.ownRate(1)
	d := f.dispatcher(live, 100, 0)
	var slowIDs, fastIDs []uuid.UUID
	for i := range 12 {
		slowIDs = append(slowIDs, f.queue(d, "twilio", fmt.Sprintf("+1202555%04d", 100+i)))
	}
	fast := fmt.Sprintf("+1998%07d", time.Now().UnixNano()%10_000_000)
	for i := range 3 {
		fastIDs = append(fastIDs, f.queueFrom(d, "twilio", fast, fmt.Sprintf("+1202555%04d", 200+i)))
	}
	begun := time.Now()
	start(t, d)
	var fastSent, slowSent int
	require.Eventually(t, func() bool {
		require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE id = ANY($1)), count(*) FILTER (WHERE id = ANY($2))
			FROM messages WHERE status = 'sent'`, fastIDs, slowIDs).Scan(&fastSent, &slowSent))
		return fastSent == len(fastIDs)
	}, 20*time.Second, 20*time.Millisecond)
	took := time.Since(begun)
	assert.Less(t, took, 3*time.Second, "the other number's messages waited %s", took)
	assert.Less(t, slowSent, 8, "the other number's messages came after most of the slow number's")

	for _, id := range slowIDs {
		f.awaitStatus(id, store.StatusSent)
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	at := slices.Clone(tw.from[f.number])
	require.Len(t, at, 12)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(at); i++ {
		assert.GreaterOrEqual(t, at[i].Sub(at[i-1]), time.Second, "sends %d and %d of a 1/s number within a second", i-1, i)
	}
	// Eleven gaps of a second and the carrier's answer each; the jobs sent back lose no pace
	// beyond the machine's jitter.
	assert.Less(t, at[11].Sub(at[0]), 14*time.Second, "the slow number kept its pace")
}
