package quiethours_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/quiethours"
)

// TestHolidayDates checks the date rules against calendars worked out by hand for 2026–2028.
func TestHolidayDates(t *testing.T) {
	t.Parallel()
	date := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	cases := []struct {
		h    quiethours.Holiday
		want [3]time.Time // 2026, 2027, 2028
	}{
		{quiethours.Holiday{Month: time.January, Day: 1}, [3]time.Time{date(2026, 1, 1), date(2027, 1, 1), date(2028, 1, 1)}},
		{quiethours.Holiday{Month: time.January, Weekday: time.Monday, Nth: 3}, [3]time.Time{date(2026, 1, 19), date(2027, 1, 18), date(2028, 1, 17)}},
		{quiethours.Holiday{Month: time.February, Weekday: time.Monday, Nth: 3}, [3]time.Time{date(2026, 2, 16), date(2027, 2, 15), date(2028, 2, 21)}},
		{quiethours.Holiday{Month: time.May, Weekday: time.Monday, Nth: -1}, [3]time.Time{date(2026, 5, 25), date(2027, 5, 31), date(2028, 5, 29)}},
		{quiethours.Holiday{Month: time.September, Weekday: time.Monday, Nth: 1}, [3]time.Time{date(2026, 9, 7), date(2027, 9, 6), date(2028, 9, 4)}},
		{quiethours.Holiday{Month: time.October, Weekday: time.Monday, Nth: 2}, [3]time.Time{date(2026, 10, 12), date(2027, 10, 11), date(2028, 10, 9)}},
		{quiethours.Holiday{Month: time.November, Weekday: time.Thursday, Nth: 4}, [3]time.Time{date(2026, 11, 26), date(2027, 11, 25), date(2028, 11, 23)}},
		// Easter 2026-04-05, 2027-03-28, 2028-04-16.
		{quiethours.Holiday{Easter: true, Offset: -2}, [3]time.Time{date(2026, 4, 3), date(2027, 3, 26), date(2028, 4, 14)}},
		{quiethours.Holiday{Easter: true, Offset: -47}, [3]time.Time{date(2026, 2, 17), date(2027, 2, 9), date(2028, 2, 29)}},
	}
	for _, c := range cases {
		for i, want := range c.want {
			got, ok := c.h.Date(2026 + i)
			assert.True(t, ok)
			assert.Equal(t, want, got, "%+v in %d", c.h, 2026+i)
		}
	}
	election := quiethours.Holiday{Month: time.November, Weekday: time.Monday, Nth: 1, Offset: 1, EvenYears: true}
	got, ok := election.Date(2026)
	assert.True(t, ok)
	assert.Equal(t, date(2026, 11, 3), got, "the Tuesday after the first Monday")
	_, ok = election.Date(2027)
	assert.False(t, ok, "no general election in odd years")
}

// TestStateHolidays holds messages to a state whose law names holidays until the next day
// it allows, and sends the same day to a state whose law does not.
func TestStateHolidays(t *testing.T) {
	t.Parallel()
	ny, chi := zone(t, "America/New_York"), zone(t, "America/Chicago")
	at := func(y int, m time.Month, d, h int, loc *time.Location) time.Time {
		return time.Date(y, m, d, h, 0, 0, 0, loc)
	}
	msg := func(state string, loc *time.Location) quiethours.Message {
		return quiethours.Message{RecipientZone: loc.String(), State: state}
	}
	cases := []struct {
		name  string
		msg   quiethours.Message
		now   time.Time
		until time.Time
	}{
		{"LA Good Friday to Saturday", msg("LA", chi), at(2026, 4, 3, 10, chi), at(2026, 4, 4, 8, chi)},
		{"MS Good Friday sends", msg("MS", chi), at(2026, 4, 3, 10, chi), at(2026, 4, 3, 10, chi)},
		{"AL Good Friday sends", msg("AL", chi), at(2026, 4, 3, 10, chi), at(2026, 4, 3, 10, chi)},
		{"LA Mardi Gras 2028 to Wednesday", msg("LA", chi), at(2028, 2, 29, 9, chi), at(2028, 3, 1, 8, chi)},
		{"AL Memorial Day to Tuesday", msg("AL", chi), at(2026, 5, 25, 10, chi), at(2026, 5, 26, 8, chi)},
		{"TX Memorial Day sends", msg("TX", chi), at(2026, 5, 25, 10, chi), at(2026, 5, 25, 10, chi)},
		// 4 July 2026 is a Saturday: Alabama keeps it on Friday the 3rd as well; Sunday
		// is closed, so Monday.
		{"AL Friday before a Saturday holiday", msg("AL", chi), at(2026, 7, 3, 10, chi), at(2026, 7, 6, 8, chi)},
		{"LA the Friday before sends", msg("LA", chi), at(2026, 7, 3, 10, chi), at(2026, 7, 3, 10, chi)},
		{"RI Saturday holiday keeps Saturday hours", msg("RI", ny), at(2026, 7, 4, 11, ny), at(2026, 7, 4, 11, ny)},
		// 4 July 2027 is a Sunday: Alabama and Rhode Island keep Monday the 5th; Louisiana
		// moves nothing.
		{"AL Sunday holiday kept Monday", msg("AL", chi), at(2027, 7, 5, 10, chi), at(2027, 7, 6, 8, chi)},
		{"RI Sunday holiday kept Monday", msg("RI", ny), at(2027, 7, 5, 10, ny), at(2027, 7, 6, 9, ny)},
		{"LA Monday after sends", msg("LA", chi), at(2027, 7, 5, 10, chi), at(2027, 7, 5, 10, chi)},
		{"RI Victory Day to Tuesday", msg("RI", ny), at(2026, 8, 10, 10, ny), at(2026, 8, 11, 9, ny)},
		{"CT Victory Day sends", msg("CT", ny), at(2026, 8, 10, 10, ny), at(2026, 8, 10, 10, ny)},
		{"RI Christmas (Friday) to Saturday 10:00", msg("RI", ny), at(2026, 12, 25, 10, ny), at(2026, 12, 26, 10, ny)},
		{"RI Election Day 2026", msg("RI", ny), at(2026, 11, 3, 10, ny), at(2026, 11, 4, 9, ny)},
		// Christmas 2027 and New Year's Day 2028 are Saturdays: Alabama keeps the Fridays
		// before, across the turn of the year.
		{"AL Christmas Eve 2027 to Monday", msg("AL", chi), at(2027, 12, 24, 10, chi), at(2027, 12, 27, 8, chi)},
		{"AL New Year's Eve 2027 to Monday", msg("AL", chi), at(2027, 12, 31, 10, chi), at(2028, 1, 3, 8, chi)},
		{"AL Thanksgiving evening to Friday", msg("AL", chi), at(2028, 11, 22, 20, chi), at(2028, 11, 24, 8, chi)},
		{"no state: holidays send", msg("", chi), at(2026, 12, 25, 10, chi), at(2026, 12, 25, 10, chi)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.until.Sub(c.now), c.msg.Wait(c.now), "held until %s", c.now.Add(c.msg.Wait(c.now)))
		})
	}
	// The validity period of a text handed over the evening before a holiday ends at that
	// evening's close, not the next day's.
	closes, ok := msg("LA", chi).Closes(at(2026, 4, 2, 19, chi))
	require.True(t, ok)
	assert.Equal(t, at(2026, 4, 2, 20, chi), closes.In(chi))
}

// TestDocsListEveryHoliday keeps docs/quiet-hours.md's holiday section to the data: each
// state's rule, source and every holiday by name.
func TestDocsListEveryHoliday(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/quiet-hours.md")
	require.NoError(t, err)
	n := 0
	for _, r := range quiethours.StateRules {
		if r.Holidays == nil {
			continue
		}
		n++
		assert.Contains(t, string(doc), r.Holidays.Note, r.State)
		assert.Contains(t, string(doc), r.Holidays.Source, r.State)
		for _, h := range r.Holidays.Days {
			assert.Contains(t, string(doc), h.Name, "%s: %s", r.State, h.Name)
		}
	}
	assert.Equal(t, 3, n, "Alabama, Louisiana and Rhode Island")
}
