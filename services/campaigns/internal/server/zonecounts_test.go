package server

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"

	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

// A count serves the campaign as counted for zoneCountsTTL: not once it lapsed, nor once the
// campaign changed status or was submitted again (a resumed or resubmitted campaign is counted
// afresh), nor another campaign.
func TestZoneCountsServeTheCampaignAsCounted(t *testing.T) {
	t.Parallel()
	var z zoneCounts
	c := &store.Campaign{ID: uuid.New(), Status: store.StatusSending, Submission: 1}
	at := time.Now()
	groups := []store.ZoneCount{{Timezone: "America/Chicago", Count: 7}}
	z.put(c, groups, at, time.Millisecond)

	got, when, ok := z.get(c, at.Add(zoneCountsTTL/2))
	assert.True(t, ok)
	assert.Equal(t, groups, got)
	assert.Equal(t, at, when, "the estimate runs from when they were counted")

	_, _, ok = z.get(c, at.Add(zoneCountsTTL))
	assert.False(t, ok, "lapsed")
	paused := *c
	paused.Status = store.StatusPaused
	_, _, ok = z.get(&paused, at)
	assert.False(t, ok, "another status")
	again := *c
	again.Submission = 2
	_, _, ok = z.get(&again, at)
	assert.False(t, ok, "submitted again")
	_, _, ok = z.get(&store.Campaign{ID: uuid.New(), Status: store.StatusSending, Submission: 1}, at)
	assert.False(t, ok, "another campaign")
}

// A count that took long serves zoneCountsCost times as long as it took: a large campaign's
// counts, each a read of its recipients, are not repeated every zoneCountsTTL.
func TestSlowZoneCountsServeLonger(t *testing.T) {
	t.Parallel()
	var z zoneCounts
	c := &store.Campaign{ID: uuid.New(), Status: store.StatusSending, Submission: 1}
	at := time.Now()
	took := 500 * time.Millisecond
	z.put(c, []store.ZoneCount{{Timezone: "America/Chicago", Count: 200_000}}, at, took)

	_, _, ok := z.get(c, at.Add(zoneCountsTTL))
	assert.True(t, ok, "still serving past zoneCountsTTL")
	_, _, ok = z.get(c, at.Add(zoneCountsCost*took-time.Millisecond))
	assert.True(t, ok)
	_, _, ok = z.get(c, at.Add(zoneCountsCost*took))
	assert.False(t, ok, "lapsed")
}
