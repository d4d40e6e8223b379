package quiethours

import "time"

// window is a weekly window kept to in one zone, closed on holidays' days (nil: none).
type window struct {
	loc      *time.Location
	days     [7]Hours
	holidays *Holidays
}

// federal is the 08:00–21:00 window of every day.
var federal = daily(Start, End)

// today is the window of t's local day, as instants (from == to: closed all day).
func (w window) today(t time.Time) (from, to time.Time) {
	l := t.In(w.loc)
	h := w.days[l.Weekday()]
	if w.holidays.Closed(l.Year(), l.Month(), l.Day()) {
		h = Hours{}
	}
	return time.Date(l.Year(), l.Month(), l.Day(), h.Start, 0, 0, 0, w.loc),
		time.Date(l.Year(), l.Month(), l.Day(), h.End, 0, 0, 0, w.loc)
}

// span is the window open at t, else the next one: ok false when there is none within a week.
func (w window) span(t time.Time) (from, to time.Time, ok bool) {
	l := t.In(w.loc)
	for d := range 8 {
		day := time.Date(l.Year(), l.Month(), l.Day()+d, 12, 0, 0, 0, w.loc)
		from, to = w.today(day)
		if from.Before(to) && to.After(t) {
			return later(from, t), to, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// settle is the first instant at or after now when every one of ws is open; ok is false when
// none comes within a few passes (windows in zones far apart that never overlap).
func settle(now time.Time, ws []window) (time.Time, bool) {
	at := now
	for range 4*len(ws) + 1 { // each pass moves at to a later opening; a few settle it
		moved := false
		for _, w := range ws {
			from, _, ok := w.span(at)
			if !ok {
				return time.Time{}, false
			}
			if from.After(at) {
				at, moved = from, true
			}
		}
		if !moved {
			return at, true
		}
	}
	return time.Time{}, false
}

// closing is when the first of ws to close does, from now (the end of each one's window open
// at now, else of its next); ok is false when ws is empty.
func closing(now time.Time, ws []window) (at time.Time, ok bool) {
	for _, w := range ws {
		if _, end, found := w.span(now); found && (!ok || end.Before(at)) {
			at, ok = end, true
		}
	}
	return at, ok
}

// zoneWindows are the federal windows of the known zones among zones.
func zoneWindows(zones ...string) []window {
	ws := make([]window, 0, len(zones)+2)
	for _, tz := range zones {
		if tz == "" {
			continue
		}
		if loc, err := Location(tz); err == nil {
			ws = append(ws, window{loc, federal, nil})
		}
	}
	return ws
}
