// Package quiethours is the one rule of when bulk messages (campaigns, polls) may go out:
// from 08:00 to 21:00 local time in their zone. Messaging applies it when a message leaves the
// queue; campaigns refuses an immediate send submitted outside it.
package quiethours

import "time"

// The window, in local hours: [Start, End).
const (
	Start = 8
	End   = 21
)

// Open reports whether now is inside the window in loc.
func Open(loc *time.Location, now time.Time) bool {
	h := now.In(loc).Hour()
	return h >= Start && h < End
}

// NextOpen is when the window next opens in loc after now (now itself when it is open).
func NextOpen(loc *time.Location, now time.Time) time.Time {
	if Open(loc, now) {
		return now
	}
	local := now.In(loc)
	next := time.Date(local.Year(), local.Month(), local.Day(), Start, 0, 0, 0, loc)
	if !next.After(local) {
		next = time.Date(local.Year(), local.Month(), local.Day()+1, Start, 0, 0, 0, loc)
	}
	return next
}

// Wait is how long a message with quiet hours in tz must wait at now; 0 means send now. An
// empty or unknown timezone has no quiet hours (callers validate zones when they accept them).
func Wait(tz string, now time.Time) time.Duration {
	if tz == "" {
		return 0
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return 0
	}
	return NextOpen(loc, now).Sub(now)
}
