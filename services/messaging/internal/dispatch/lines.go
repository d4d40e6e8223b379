package dispatch

import (
	"math"
	"time"
)

// A number's line keeps the dispatch workers of a process from waiting on one number while
// other numbers' messages wait for a worker. River hands out jobs oldest first and a
// campaign's jobs come in runs of a batch, so without it every worker could take one number's
// jobs and wait in its throttle for seconds (ten campaigns on ten numbers then sent at little
// more than one number's rate, and a job waiting longer than its timeout was retried).
//
// A number admits the jobs its free tokens and about holdFor of its rate serve (capacity):
// those hold a worker until their token. Any other job of the number goes back to the queue
// with a slot booked in the number's line, one slot every 1/rate seconds after the jobs
// ahead, and keeps it (in its recorded output) until it comes back for it, so the number's
// pace never waits for a job that was sent away. A job that comes back to a full line
// (another replica sends the number's messages too, or the carrier is slower than the rate)
// books again at the end. A number the dispatch cannot keep busy (its rate is above what the
// workers reach) always has free tokens, so its jobs are never sent back.
type line struct {
	held int       // jobs admitted and not yet granted a token
	next time.Time // the first slot not booked by a job sent back
	// spare is how many of the number's tokens were free after the last grant, at spareAt.
	spare   int
	spareAt time.Time
}

const (
	// holdFor is how long of a number's rate may wait in its throttle holding a worker: long
	// enough that the pacer always has a waiter when a token frees, whatever the jitter of a
	// job's return (River looks for due jobs every 100 ms).
	holdFor = 250 * time.Millisecond
	// comeBackEarly is how long before its slot a job sent back is due again.
	comeBackEarly = 150 * time.Millisecond
	// schedulerLag is how late River may make a job due that was snoozed for longer than this
	// (its scheduler looks every 5 s; a shorter snooze is due on time): a job sent back further
	// comes back this much earlier, and is sent back once more, briefly, for its slot.
	schedulerLag = 5 * time.Second
)

// capacity is how many jobs of a number sending rate messages a second may wait for its
// tokens at once: its free tokens (all of them when the last grant here is a second old:
// they have all freed since, unless another replica took them), holdFor of its rate, and one
// more, so that the next job is waiting when the current one's token comes.
func (l *line) capacity(rate int, now time.Time) int {
	spare := rate
	if now.Sub(l.spareAt) < time.Second {
		spare = l.spare
	}
	return spare + int(math.Ceil(float64(rate)*holdFor.Seconds())) + 1
}

// enter admits a job of number (sending rate messages a second) into the number's throttle,
// or books it a slot to come back for. slot is the one it booked on an earlier run (zero for
// none). Admitted (zero slot returned), the job must leave once it got its token or gave up.
func (t *throttle) enter(number string, rate int, slot, now time.Time) (booked time.Time) {
	if slot.Sub(now) > comeBackEarly+holdFor { // back early (River's scheduler): its slot is still ahead
		return slot
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.lines[number]
	if l == nil {
		l = &line{}
		t.lines[number] = l
	}
	// A job with a slot of its own comes before the jobs booked after it; a new one waits
	// behind every booked slot.
	if l.held < l.capacity(rate, now) && (!slot.IsZero() || !l.next.After(now.Add(holdFor))) {
		l.held++
		return time.Time{}
	}
	gap := time.Second / time.Duration(max(rate, 1))
	booked = now.Add(time.Duration(l.held) * gap)
	if l.next.After(booked) {
		booked = l.next
	}
	l.next = booked.Add(gap)
	return booked
}

// leave ends an admitted job's wait in its number's line.
func (t *throttle) leave(number string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.lines[number]
	if l == nil {
		return
	}
	l.held--
	if l.held <= 0 && !l.next.After(now) {
		delete(t.lines, number)
	}
}

// noteSpare records how many of number's tokens were free after a grant at now; t.mu is held.
func (t *throttle) noteSpare(number string, spare int, now time.Time) {
	if l := t.lines[number]; l != nil {
		l.spare, l.spareAt = spare, now
	}
}

// comeBackIn is how long a job booked for slot sleeps: until a little before it, or, that
// being further than River schedules on time, until schedulerLag before that.
func comeBackIn(slot, now time.Time) time.Duration {
	wait := slot.Add(-comeBackEarly).Sub(now)
	if wait > schedulerLag {
		wait -= schedulerLag
	}
	return max(wait, time.Millisecond)
}
