package quiethours_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/quiethours"
)

func TestWindow(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	cases := []struct {
		name string
		now  time.Time
		open bool
		next time.Time
	}{
		{"before opening", time.Date(2026, 3, 2, 7, 59, 0, 0, ny), false, time.Date(2026, 3, 2, 8, 0, 0, 0, ny)},
		{"at opening", time.Date(2026, 3, 2, 8, 0, 0, 0, ny), true, time.Date(2026, 3, 2, 8, 0, 0, 0, ny)},
		{"last minute", time.Date(2026, 3, 2, 20, 59, 0, 0, ny), true, time.Date(2026, 3, 2, 20, 59, 0, 0, ny)},
		{"at closing", time.Date(2026, 3, 2, 21, 0, 0, 0, ny), false, time.Date(2026, 3, 3, 8, 0, 0, 0, ny)},
		// The night before the spring change: 08:00 the next day is one hour fewer away.
		{"across DST", time.Date(2026, 3, 7, 22, 0, 0, 0, ny), false, time.Date(2026, 3, 8, 8, 0, 0, 0, ny)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.open, quiethours.Open(ny, c.now))
			assert.True(t, c.next.Equal(quiethours.NextOpen(ny, c.now)), "next %s", quiethours.NextOpen(ny, c.now))
			assert.Equal(t, c.next.Sub(c.now), quiethours.Wait("America/New_York", c.now))
		})
	}
	assert.Zero(t, quiethours.Wait("", time.Date(2026, 3, 2, 3, 0, 0, 0, ny)), "no zone, no quiet hours")
	// Noon in New York is 02:00 in Tokyo: six hours to wait there.
	assert.Equal(t, 6*time.Hour, quiethours.Wait("Asia/Tokyo", time.Date(2026, 3, 2, 12, 0, 0, 0, ny)))
}
