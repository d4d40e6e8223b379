// Package daterange reads an analytics request's startDate and endDate as local dates of the
// organization's zone, with the spec's defaults and the range limit.
package daterange

import (
	"strconv"
	"time"

	"github.com/chorus-sms/chorus/pkg/apierr"
)

// MaxDays bounds a range (both ends included): a year, a leap year's too.
const MaxDays = 366

// Range is a span of local dates, both included, as midnight UTC values of those dates.
type Range struct{ Start, End time.Time }

// Days is how many dates the range holds.
func (r Range) Days() int { return int(r.End.Sub(r.Start).Hours()/24) + 1 }

// Parse reads start and end (each YYYY-MM-DD, or an RFC 3339 time read as its date in loc)
// into a range. An empty end is today in loc at now; an empty start is back days before end.
// An unreadable date, an end before the start, or more than MaxDays days is a validation
// error naming the field.
func Parse(start, end string, back int, loc *time.Location, now time.Time) (Range, error) {
	f := apierr.Fields{}
	var r Range
	var ok bool
	if end == "" {
		lt := now.In(loc)
		r.End = time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, time.UTC)
	} else if r.End, ok = date(end, loc); !ok {
		f.Add("endDate", "must be a date, YYYY-MM-DD")
	}
	if start == "" {
		if ok || end == "" {
			r.Start = r.End.AddDate(0, 0, -back)
		}
	} else if r.Start, ok = date(start, loc); !ok {
		f.Add("startDate", "must be a date, YYYY-MM-DD")
	}
	if err := f.Err(); err != nil {
		return Range{}, err
	}
	switch {
	case r.End.Before(r.Start):
		return Range{}, apierr.Field("endDate", "must not be before startDate")
	case r.Days() > MaxDays:
		return Range{}, apierr.Field("startDate", "a range holds at most "+strconv.Itoa(MaxDays)+" days")
	}
	return r, nil
}

// date reads s as a date: YYYY-MM-DD, or an RFC 3339 time's date in loc.
func date(s string, loc *time.Location) (time.Time, bool) {
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d, true
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, false
	}
	lt := t.In(loc)
	return time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, time.UTC), true
}
