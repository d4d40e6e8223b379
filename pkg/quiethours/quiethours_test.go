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

func TestWaitAndClosesAcrossZones(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	// 09:00 in New York is 06:00 in Los Angeles: wait for 08:00 there.
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, ny)
	assert.Equal(t, 2*time.Hour, quiethours.Message{Zone: "America/New_York", RecipientZone: "America/Los_Angeles"}.Wait(now))
	assert.Equal(t, time.Duration(0), quiethours.Message{Zone: "America/New_York"}.Wait(now), "an unknown zone is ignored")
	// 20:00 in New York: open in both, New York closes first, in an hour.
	now = time.Date(2026, 3, 2, 20, 0, 0, 0, ny)
	assert.Equal(t, time.Duration(0), quiethours.Message{Zone: "America/New_York", RecipientZone: "America/Los_Angeles"}.Wait(now))
	closes, ok := quiethours.Closes(now, "America/Los_Angeles", "America/New_York")
	require.True(t, ok)
	assert.Equal(t, time.Date(2026, 3, 2, 21, 0, 0, 0, ny), closes.In(ny))
	_, ok = quiethours.Closes(now, "", "Not/AZone")
	assert.False(t, ok)
}

func TestRecipientZone(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "Asia/Tokyo", quiethours.RecipientZone("Asia/Tokyo", "+12025550143"), "the contact's zone first")
	assert.Equal(t, "America/New_York", quiethours.RecipientZone("", "+12025550143"), "202 is Washington, DC")
	assert.Equal(t, "America/Los_Angeles", quiethours.RecipientZone("Not/AZone", "+14155550143"), "415 is San Francisco")
	assert.Equal(t, "", quiethours.RecipientZone("", "+18005550143"), "toll-free: no zone")
}
