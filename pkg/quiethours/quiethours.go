// Package quiethours is the one rule of when bulk messages (campaigns, polls) may go out:
// from 08:00 to 21:00 local time in their zone, and in the recipient's own zone when it is
// known (TCPA). Messaging applies it when a message leaves the queue; campaigns refuses an
// immediate send submitted outside it.
package quiethours

import (
	"time"

	"github.com/nyaruka/phonenumbers"
)

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
	loc, err := Location(tz)
	if err != nil {
		return 0
	}
	return NextOpen(loc, now).Sub(now)
}

// WaitAll is how long a message must wait at now until the window is open in every one of
// zones at once (empty or unknown zones are ignored); 0 means send now. Two 13-hour windows
// always overlap, so the search ends.
func WaitAll(now time.Time, zones ...string) time.Duration {
	at := now
	for range 2 * len(zones) { // each pass moves at to a later opening; a few settle it
		moved := false
		for _, tz := range zones {
			if w := Wait(tz, at); w > 0 {
				at, moved = at.Add(w), true
			}
		}
		if !moved {
			break
		}
	}
	return at.Sub(now)
}

// Closes is when the window closes (End local) in the first of zones to close after now, all
// of them open at now; ok is false when no zone is known. Nothing handed over at now should
// arrive after it: it bounds the carrier's validity period.
func Closes(now time.Time, zones ...string) (at time.Time, ok bool) {
	for _, tz := range zones {
		if tz == "" {
			continue
		}
		loc, err := Location(tz)
		if err != nil {
			continue
		}
		l := now.In(loc)
		end := time.Date(l.Year(), l.Month(), l.Day(), End, 0, 0, 0, loc)
		if !end.After(now) {
			end = time.Date(l.Year(), l.Month(), l.Day()+1, End, 0, 0, 0, loc)
		}
		if !ok || end.Before(at) {
			at, ok = end, true
		}
	}
	return at, ok
}

// RecipientZone is a recipient's own zone: the contact's timezone when it is a real zone,
// else the zone of its E.164 phone when its prefix (a US area code) lies in exactly one zone,
// else "" (unknown: only the campaign's zone applies).
func RecipientZone(contactZone, e164 string) string {
	if contactZone != "" {
		if _, err := Location(contactZone); err == nil {
			return contactZone
		}
	}
	zones, err := phonenumbers.GetTimezonesForPrefix(e164)
	if err != nil || len(zones) != 1 || zones[0] == phonenumbers.UNKNOWN_TIMEZONE {
		return ""
	}
	if _, err := Location(zones[0]); err != nil {
		return ""
	}
	return zones[0]
}

// Finish estimates when n messages sent at rate per second from start are all out, sending
// only inside the window in tz (none: at any hour).
func Finish(start time.Time, n int, rate float64, tz string) time.Time {
	if n <= 0 || rate <= 0 {
		return start
	}
	loc, err := Location(tz)
	if tz == "" || err != nil {
		return start.Add(time.Duration(float64(n) / rate * float64(time.Second)))
	}
	at, left := start, float64(n)
	for {
		at = NextOpen(loc, at)
		closes, _ := Closes(at, tz)
		need := time.Duration(left / rate * float64(time.Second))
		if at.Add(need).Before(closes) || at.Add(need).Equal(closes) {
			return at.Add(need)
		}
		left -= closes.Sub(at).Seconds() * rate
		at = closes
	}
}
