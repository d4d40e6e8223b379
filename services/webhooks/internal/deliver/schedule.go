package deliver

import "time"

// DefaultSchedule is the wait before each retry, as Standard Webhooks suggests: the last
// attempt comes a little over 27 hours after the first, so an endpoint that is down for a
// day still receives every event.
var DefaultSchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// schedule is the wait before each retry; its length is the number of retries.
type schedule []time.Duration

// after is when the attempt after attempt n (1-based) is due, from now; ok is false when n
// was the last.
func (s schedule) after(n int, now time.Time) (time.Time, bool) {
	if n > len(s) {
		return time.Time{}, false
	}
	return now.Add(s[n-1]), true
}
