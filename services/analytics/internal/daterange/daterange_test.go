package daterange_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/services/analytics/internal/daterange"
)

// Defaults count back from today in the organization's zone (Chicago is still on the 9th
// at 03:00 UTC on the 10th); dates are local dates; bad ranges name their field.
func TestRangesAreLocalDatesWithDefaultsAndLimits(t *testing.T) {
	chicago, err := time.LoadLocation("America/Chicago")
	require.NoError(t, err)
	now := time.Date(2026, 3, 10, 3, 0, 0, 0, time.UTC)
	d := func(s string) time.Time { t, _ := time.Parse(time.DateOnly, s); return t }

	r, err := daterange.Parse("", "", 30, chicago, now)
	require.NoError(t, err)
	assert.Equal(t, daterange.Range{Start: d("2026-02-07"), End: d("2026-03-09")}, r)
	assert.Equal(t, 31, r.Days())

	r, err = daterange.Parse("", "2026-01-31", 90, chicago, now)
	require.NoError(t, err)
	assert.Equal(t, d("2025-11-02"), r.Start)

	r, err = daterange.Parse("2026-03-01T02:00:00Z", "2026-03-01", 30, chicago, now)
	require.NoError(t, err)
	assert.Equal(t, d("2026-02-28"), r.Start, "a time is read as its local date")

	r, err = daterange.Parse("2025-01-01", "2026-01-01", 30, chicago, now)
	require.NoError(t, err)
	assert.Equal(t, 366, r.Days(), "366 days are allowed")

	for _, c := range []struct{ start, end, field string }{
		{"2025-01-01", "2026-01-02", "startDate"},
		{"2026-03-02", "2026-03-01", "endDate"},
		{"March 1", "", "startDate"},
		{"", "2026-13-01", "endDate"},
	} {
		_, err := daterange.Parse(c.start, c.end, 30, chicago, now)
		require.Error(t, err, "%+v", c)
		assert.Contains(t, apierr.FieldViolations(err), c.field, "%+v", c)
	}
}
