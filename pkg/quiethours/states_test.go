package quiethours_test

import (
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/quiethours"
)

// zone loads a zone the tests name.
func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// June 2026: the 1st is a Monday, the 6th a Saturday, the 7th a Sunday; no DST change.
func TestStateRules(t *testing.T) {
	t.Parallel()
	ny, chi, la := zone(t, "America/New_York"), zone(t, "America/Chicago"), zone(t, "America/Los_Angeles")
	at := func(day, h, m int, loc *time.Location) time.Time { return time.Date(2026, 6, day, h, m, 0, 0, loc) }
	cases := []struct {
		name  string
		msg   quiethours.Message
		now   time.Time
		until time.Time // when the message may go (now: at once)
	}{
		{"FL 19:59 open", quiethours.Message{RecipientZone: "America/New_York", State: "FL"}, at(1, 19, 59, ny), at(1, 19, 59, ny)},
		{"FL 20:00 held to 08:00", quiethours.Message{RecipientZone: "America/New_York", State: "FL"}, at(1, 20, 0, ny), at(2, 8, 0, ny)},
		{"no state 20:00 open", quiethours.Message{RecipientZone: "America/New_York"}, at(1, 20, 0, ny), at(1, 20, 0, ny)},
		{"OK 20:30", quiethours.Message{RecipientZone: "America/Chicago", State: "OK"}, at(1, 20, 30, chi), at(2, 8, 0, chi)},
		{"MD 20:30", quiethours.Message{RecipientZone: "America/New_York", State: "MD"}, at(1, 20, 30, ny), at(2, 8, 0, ny)},
		{"MA 20:30", quiethours.Message{RecipientZone: "America/New_York", State: "MA"}, at(1, 20, 30, ny), at(2, 8, 0, ny)},
		{"CT 08:30 held to 09:00", quiethours.Message{RecipientZone: "America/New_York", State: "CT"}, at(1, 8, 30, ny), at(1, 9, 0, ny)},
		{"CT 20:00", quiethours.Message{RecipientZone: "America/New_York", State: "CT"}, at(1, 20, 0, ny), at(2, 9, 0, ny)},
		{"KY 09:30 held to 10:00", quiethours.Message{RecipientZone: "America/New_York", State: "KY"}, at(1, 9, 30, ny), at(1, 10, 0, ny)},
		{"MI 08:30 held to 09:00", quiethours.Message{RecipientZone: "America/Detroit", State: "MI"}, at(1, 8, 30, ny), at(1, 9, 0, ny)},
		{"MI 20:30 open", quiethours.Message{RecipientZone: "America/Detroit", State: "MI"}, at(1, 20, 30, ny), at(1, 20, 30, ny)},
		{"MN 08:30", quiethours.Message{RecipientZone: "America/Chicago", State: "MN"}, at(1, 8, 30, chi), at(1, 9, 0, chi)},
		{"NM 08:30", quiethours.Message{RecipientZone: "America/Denver", State: "NM"}, at(1, 9, 30, chi), at(1, 10, 0, chi)},
		{"NV 20:30", quiethours.Message{RecipientZone: "America/Los_Angeles", State: "NV"}, at(1, 20, 30, la), at(2, 9, 0, la)},
		{"NV 08:30", quiethours.Message{RecipientZone: "America/Los_Angeles", State: "NV"}, at(1, 8, 30, la), at(1, 9, 0, la)},
		{"WA 20:30", quiethours.Message{RecipientZone: "America/Los_Angeles", State: "WA"}, at(1, 20, 30, la), at(2, 8, 0, la)},
		{"TX Saturday 10:00 open", quiethours.Message{RecipientZone: "America/Chicago", State: "TX"}, at(6, 10, 0, chi), at(6, 10, 0, chi)},
		{"TX Saturday 08:30", quiethours.Message{RecipientZone: "America/Chicago", State: "TX"}, at(6, 8, 30, chi), at(6, 9, 0, chi)},
		{"TX Sunday 10:00 held to noon", quiethours.Message{RecipientZone: "America/Chicago", State: "TX"}, at(7, 10, 0, chi), at(7, 12, 0, chi)},
		{"TX Saturday 21:00 to Sunday noon", quiethours.Message{RecipientZone: "America/Chicago", State: "TX"}, at(6, 21, 0, chi), at(7, 12, 0, chi)},
		{"RI Friday 18:00 to Saturday 10:00", quiethours.Message{RecipientZone: "America/New_York", State: "RI"}, at(5, 18, 0, ny), at(6, 10, 0, ny)},
		{"RI Saturday 17:00 to Monday 09:00", quiethours.Message{RecipientZone: "America/New_York", State: "RI"}, at(6, 17, 0, ny), at(8, 9, 0, ny)},
		{"RI Sunday noon to Monday 09:00", quiethours.Message{RecipientZone: "America/New_York", State: "RI"}, at(7, 12, 0, ny), at(8, 9, 0, ny)},
		{"AL Sunday to Monday", quiethours.Message{RecipientZone: "America/Chicago", State: "AL"}, at(7, 10, 0, chi), at(8, 8, 0, chi)},
		{"AL Saturday 19:00 open", quiethours.Message{RecipientZone: "America/Chicago", State: "AL"}, at(6, 19, 0, chi), at(6, 19, 0, chi)},
		{"LA Sunday to Monday", quiethours.Message{RecipientZone: "America/Chicago", State: "LA"}, at(7, 10, 0, chi), at(8, 8, 0, chi)},
		{"MS Sunday to Monday", quiethours.Message{RecipientZone: "America/Chicago", State: "MS"}, at(7, 10, 0, chi), at(8, 8, 0, chi)},
		// Zone unknown: every zone of the state. Florida's panhandle is an hour behind Miami.
		{"FL either zone", quiethours.Message{State: "FL"}, at(1, 7, 30, chi), at(1, 8, 0, chi)},
		{"FL either zone evening", quiethours.Message{State: "FL"}, at(1, 19, 30, chi), at(2, 8, 0, chi)},
		// A state without a narrower law, or its law turned off (no state): the federal window.
		{"NY", quiethours.Message{RecipientZone: "America/New_York", State: "NY"}, at(7, 20, 30, ny), at(7, 20, 30, ny)},
		// The sender's zone too; where it never overlaps the state's window, the state wins.
		{"with the campaign's zone", quiethours.Message{Zone: "America/Los_Angeles", RecipientZone: "America/New_York", State: "CT"}, at(1, 9, 30, ny), at(1, 11, 0, ny)},
		{"no overlap with Tokyo", quiethours.Message{Zone: "Asia/Tokyo", RecipientZone: "America/New_York", State: "RI"}, at(1, 8, 0, ny), at(1, 9, 0, ny)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.until.Sub(c.now), c.msg.Wait(c.now), "held until %s", c.now.Add(c.msg.Wait(c.now)))
		})
	}
}

// TestEveryRuleWindow walks each row of the table through a week: each day's window opens
// and closes where the row says, and the validity period ends at its close.
func TestEveryRuleWindow(t *testing.T) {
	t.Parallel()
	for _, r := range quiethours.StateRules {
		require.NotEmpty(t, r.Source, r.State)
		require.NotEmpty(t, r.Zones, r.State)
		loc := zone(t, r.Zones[0])
		m := quiethours.Message{RecipientZone: r.Zones[0], State: r.State}
		for day := 1; day <= 7; day++ {
			h := r.Days[time.Date(2026, 6, day, 12, 0, 0, 0, loc).Weekday()]
			if h.Start == h.End || r.Holidays.Closed(2026, time.June, day) { // Alabama: Jefferson Davis' Birthday, 1 June
				assert.Positive(t, m.Wait(time.Date(2026, 6, day, 12, 0, 0, 0, loc)), "%s closed on day %d", r.State, day)
				continue
			}
			assert.LessOrEqual(t, quiethours.Start, h.Start, r.State)
			assert.GreaterOrEqual(t, quiethours.End, h.End, r.State)
			open, end := time.Date(2026, 6, day, h.Start, 0, 0, 0, loc), time.Date(2026, 6, day, h.End, 0, 0, 0, loc)
			assert.Zero(t, m.Wait(open), "%s opens on day %d", r.State, day)
			assert.Positive(t, m.Wait(open.Add(-time.Minute)), "%s not before", r.State)
			assert.Zero(t, m.Wait(end.Add(-time.Minute)), "%s open until", r.State)
			assert.Positive(t, m.Wait(end), "%s closed at", r.State)
			closes, ok := m.Closes(open)
			assert.True(t, ok && closes.Equal(end), "%s closes at %s, not %s", r.State, end, closes)
		}
	}
}

func TestRecipientState(t *testing.T) {
	t.Parallel()
	cases := []struct{ contact, phone, want string }{
		{"FL", "+12125550100", "FL"},
		{"florida", "+12125550100", "FL"},
		{" Texas ", "", "TX"},
		{"", "+13055550100", "FL"}, // Miami
		{"", "+12125550100", "NY"}, // New York, NY
		{"", "+14015550100", "RI"},
		{"", "+19185550100", "OK"},
		{"Ontario", "+14165550100", ""}, // Toronto: no US state
		{"", "+442071838750", ""},
		{"", "", ""},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, quiethours.RecipientState(c.contact, c.phone), "%q %q", c.contact, c.phone)
	}
}

// TestDocsListEveryStateRule keeps docs/quiet-hours.md's table to StateRules, row by row.
func TestDocsListEveryStateRule(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/quiet-hours.md")
	require.NoError(t, err)
	for _, r := range quiethours.StateRules {
		assert.Contains(t, string(doc), fmt.Sprintf("(%s) | %s | %s |", r.State, r.Note, r.Source), "docs row of %s", r.State)
	}
	rows := regexp.MustCompile(`(?m)^\| [A-Za-z ]+ \([A-Z]{2}\) \|`).FindAllString(string(doc), -1)
	assert.Len(t, rows, len(quiethours.StateRules), "no row the table lacks")
}
