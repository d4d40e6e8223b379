package quiethours

import (
	"slices"
	"time"
)

// Queue is Count messages that keep to the same quiet hours: a campaign's queued recipients
// of one zone and state.
type Queue struct {
	Message
	Count int
}

// estimateHorizon bounds Estimate: a send that would take longer is answered as ending then.
const estimateHorizon = 5 * 365 * 24 * time.Hour

// Estimate is when the messages of queues are all sent from start at rate messages per second
// (the sending numbers' rates summed), each only while its windows are open (Message.Wait),
// as dispatch sends them: a message that waits for its window is due when the window opens,
// the messages due first go first (River takes jobs by their time), and those due at the same
// time share the rate in proportion to their numbers (the audience is queued in contact
// order, which mixes the zones). It steps from one window's opening or closing to the
// next, so its cost grows with the zones and days, never with the number of messages.
func Estimate(start time.Time, rate float64, queues []Queue) time.Time {
	if rate <= 0 {
		return start
	}
	left := make([]float64, len(queues))
	for i, q := range queues {
		left[i] = float64(max(q.Count, 0))
	}
	dueSince := make([]time.Time, len(queues)) // zero while closed
	at, end := start, start.Add(estimateHorizon)
	for at.Before(end) {
		next, open := end, []int(nil)
		for i, q := range queues {
			if left[i] <= 0 {
				continue
			}
			if w := q.Wait(at); w > 0 {
				dueSince[i] = time.Time{}
				next = earlier(next, at.Add(w))
				continue
			}
			if dueSince[i].IsZero() {
				dueSince[i] = at
			}
			if closes, ok := q.Closes(at); ok {
				next = earlier(next, closes)
			}
			open = append(open, i)
		}
		if len(open) == 0 && next.Equal(end) {
			return at // nothing left
		}
		budget := rate * next.Sub(at).Seconds()
		used := 0.0
		for _, cohort := range cohorts(open, dueSince) {
			total := 0.0
			for _, i := range cohort {
				total += left[i]
			}
			share := min(1, (budget-used)/total)
			for _, i := range cohort {
				left[i] -= left[i] * share
				if share == 1 {
					left[i] = 0
				}
			}
			used += total * share
		}
		if !slices.ContainsFunc(left, func(n float64) bool { return n > 0 }) {
			return at.Add(time.Duration(used / rate * float64(time.Second)))
		}
		at = next
	}
	return end
}

// earlier is the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// cohorts groups open (indexes of queues) by when they became due, earliest first.
func cohorts(open []int, dueSince []time.Time) [][]int {
	slices.SortStableFunc(open, func(a, b int) int { return dueSince[a].Compare(dueSince[b]) })
	var out [][]int
	for i, q := range open {
		if i == 0 || !dueSince[q].Equal(dueSince[open[i-1]]) {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], q)
	}
	return out
}
