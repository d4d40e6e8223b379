// Package quiethours is the one rule of when bulk messages (campaigns, polls) may go out:
// from 08:00 to 21:00 local time in their zone, and in the recipient's own zone when it is
// known (TCPA), narrowed by the law of the recipient's US state where that is stricter
// (StateRules). Messaging applies it when a message leaves the queue; campaigns refuses an
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

// Closes is when the window closes (End local) in the first of zones to close after now, all
// of them open at now; ok is false when no zone is known. Nothing handed over at now should
// arrive after it: it bounds the carrier's validity period.
func Closes(now time.Time, zones ...string) (at time.Time, ok bool) {
	return closing(now, zoneWindows(zones...))
}

// Message is what quiet hours know of one message.
type Message struct {
	Zone          string // the campaign's or poll's zone (else the organization's); "" none
	RecipientZone string // the recipient's own zone; "" unknown
	// State is the recipient's US state (USPS code, see RecipientState); "" unknown or its
	// law not applied. Its rule, if any (StateRules), is kept in RecipientZone, or in every
	// zone of the state when that is unknown.
	State string
}

// plan is the windows m keeps to at now and the first instant at or after now when they are
// all open: every window, or only the recipient's (the law where they live) when those never
// overlap the sender's zone's; ok is false when not even the recipient's do.
func (m Message) plan(now time.Time) (ws []window, at time.Time, ok bool) {
	own := zoneWindows(m.RecipientZone)
	if r := RuleFor(m.State); r != nil {
		zones := r.Zones
		if len(own) > 0 {
			zones = []string{m.RecipientZone}
		}
		for _, w := range zoneWindows(zones...) {
			own = append(own, window{w.loc, r.Days, r.Holidays})
		}
	}
	all := append(zoneWindows(m.Zone), own...)
	if at, ok := settle(now, all); ok {
		return all, at, true
	}
	at, ok = settle(now, own)
	return own, at, ok
}

// Wait is how long m must wait at now; 0 means send now.
func (m Message) Wait(now time.Time) time.Duration {
	_, at, ok := m.plan(now)
	if !ok { // a rule closed a whole week: not one of StateRules; looked at again in a day
		return 24 * time.Hour
	}
	return at.Sub(now)
}

// Closes is when the first window m keeps to closes, m open at now; ok is false when m has
// no quiet hours. It bounds the carrier's validity period.
func (m Message) Closes(now time.Time) (time.Time, bool) {
	ws, _, _ := m.plan(now)
	return closing(now, ws)
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
