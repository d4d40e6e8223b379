package ingest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Whatever order a message's reports arrive in, and however often each is repeated, its fact
// ends the same: the furthest status (the first outcome of equal rank), the earliest times.
func TestMergeIgnoresOrderAndRepeats(t *testing.T) {
	t0 := time.Date(2026, 2, 2, 15, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		reports   []report
		status    string
		withdrawn bool
		left      time.Time
	}{
		"delivered": {[]report{
			{kind: "campaign", source: "c", status: statusQueued, created: t0},
			{kind: "campaign", source: "c", status: statusSent, left: t0.Add(time.Minute)},
			{kind: "campaign", source: "c", status: statusDelivered, left: t0.Add(2 * time.Minute)},
		}, statusDelivered, false, t0.Add(time.Minute)},
		"failed after sent": {[]report{
			{kind: "reply", status: statusSending, created: t0},
			{kind: "reply", status: statusSent, left: t0.Add(time.Minute)},
			{kind: "reply", status: statusFailed, left: t0.Add(3 * time.Minute)},
		}, statusFailed, false, t0.Add(time.Minute)},
		"withdrawn": {[]report{
			{kind: "campaign", source: "c", status: statusQueued, created: t0},
			{kind: "campaign", source: "c", status: statusFailed, left: t0.Add(5 * time.Minute), withdrawn: true},
		}, statusFailed, true, t0.Add(5 * time.Minute)},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for name, c := range cases {
		for range 50 {
			var in []report
			for _, r := range c.reports {
				for range 1 + rng.IntN(3) { // repeated deliveries
					in = append(in, r)
				}
			}
			rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
			var f *fact
			for _, r := range in {
				next := merge(f, r)
				f = &next
			}
			assert.Equal(t, c.status, f.status, name)
			assert.Equal(t, c.withdrawn, f.withdrawn, name)
			assert.Equal(t, c.left, *f.left, name)
			assert.Equal(t, t0, *f.created, name)
		}
	}
}

// A message counts once in total; sent covers every status the carrier took; a withdrawn
// message counts nowhere.
func TestCountsOfEachStatus(t *testing.T) {
	for status, want := range map[string]counts{
		statusQueued:      {total: 1},
		statusSending:     {total: 1},
		statusSent:        {total: 1, sent: 1},
		statusDelivered:   {total: 1, sent: 1, delivered: 1},
		statusUndelivered: {total: 1, sent: 1, undelivered: 1},
		statusFailed:      {total: 1, failed: 1},
	} {
		assert.Equal(t, want, (&fact{status: status}).counts(), status)
	}
	assert.Equal(t, counts{}, (&fact{status: statusFailed, withdrawn: true}).counts())
	assert.Equal(t, counts{}, (*fact)(nil).counts())
}
