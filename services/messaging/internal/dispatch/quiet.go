package dispatch

import "time"

// Quiet hours: campaign and poll messages go out only from 08:00 to 21:00 in their timezone.
const (
	windowStart = 8
	windowEnd   = 21
)

// untilSendable returns how long a message with quiet hours in tz must wait at now; 0 means
// send now. An empty or unknown timezone has no quiet hours (it was validated when queued).
func untilSendable(tz string, now time.Time) time.Duration {
	if tz == "" {
		return 0
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return 0
	}
	local := now.In(loc)
	if h := local.Hour(); h >= windowStart && h < windowEnd {
		return 0
	}
	next := time.Date(local.Year(), local.Month(), local.Day(), windowStart, 0, 0, 0, loc)
	if !next.After(local) {
		next = time.Date(local.Year(), local.Month(), local.Day()+1, windowStart, 0, 0, 0, loc)
	}
	return next.Sub(now)
}
