package quiethours_test

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/quiethours"
)

// fourZones are four US zones' queues of n messages each, sent from a campaign zone of zone
// ("" none).
func fourZones(zone string, n int) []quiethours.Queue {
	var qs []quiethours.Queue
	for _, tz := range []string{"America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles"} {
		qs = append(qs, quiethours.Queue{Message: quiethours.Message{Zone: zone, RecipientZone: tz}, Count: n})
	}
	return qs
}

func TestEstimateKnownAnswers(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	utc := func(d, h, m, s int) time.Time { return time.Date(2026, 3, d, h, m, s, 0, time.UTC) }
	one := func(zone string, n int) []quiethours.Queue {
		return []quiethours.Queue{{Message: quiethours.Message{Zone: zone}, Count: n}}
	}
	evening := time.Date(2026, 3, 2, 20, 0, 0, 0, ny)
	for _, tc := range []struct {
		name   string
		start  time.Time
		rate   float64
		queues []quiethours.Queue
		want   time.Time
	}{
		{"inside the window", evening, 10, one("America/New_York", 1000), evening.Add(100 * time.Second)},
		{"no zone: any hour", evening, 10, one("", 1000), evening.Add(100 * time.Second)},
		{"nothing queued", evening, 10, one("America/New_York", 0), evening},
		{"no rate", evening, 0, one("America/New_York", 10), evening},
		// One a second from 20:00: 3,600 go before 21:00, the other 400 from 08:00.
		{"over the night", evening, 1, one("America/New_York", 4000), time.Date(2026, 3, 3, 8, 6, 40, 0, ny)},
		{"submitted at night", time.Date(2026, 3, 2, 23, 0, 0, 0, ny), 1, one("America/New_York", 10), time.Date(2026, 3, 3, 8, 0, 10, 0, ny)},
		// 07:00 in New York (EST): each zone opens an hour after the one east of it, and the
		// one that opened first keeps the numbers busy until the next opens.
		{"four zones in the morning", utc(2, 12, 0, 0), 1, fourZones("", 3600), utc(2, 17, 0, 0)},
		// 20:00 in New York: the zones share the rate while open (900 each go before 21:00 in
		// New York, then 1,200 of each of the other three, 1,800 of Denver's and Los Angeles',
		// and Los Angeles' last 3,300); from 08:00 New York the 14,700 left go without a pause.
		{"four zones in the evening", utc(2, 1, 0, 0), 1, fourZones("", 7200), utc(2, 17, 5, 0)},
		// Two numbers at 1 msg/s each: the rates add up; each zone's half hour of sending
		// ends before the next opens.
		{"two numbers", utc(2, 12, 0, 0), 2, fourZones("", 3600), utc(2, 16, 30, 0)},
		// A campaign zone of New York keeps Los Angeles' recipients to 11:00-21:00 New York.
		{"campaign zone narrows", utc(2, 20, 0, 0), 1, []quiethours.Queue{{Message: quiethours.Message{Zone: "America/New_York", RecipientZone: "America/Los_Angeles"}, Count: 7200}}, utc(2, 22, 0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want.UTC(), quiethours.Estimate(tc.start, tc.rate, tc.queues).UTC())
		})
	}
}

// simulate dispatches queues message by message as messaging does: every message is a job due
// at start, in an order that mixes the queues (the audience is queued in contact order). A
// job whose window is closed when it falls due is snoozed to the opening at once (River's
// workers run jobs far faster than the numbers' slots come); the earliest due of the others
// (then the first queued) runs when the throttle's next slot comes, and is snoozed too if
// its window closed meanwhile, else it takes the slot, the next one 1/rate later. It returns when the last slot
// ends: an answer made from the rule per message, with none of Estimate's bookkeeping.
func simulate(start time.Time, rate float64, queues []quiethours.Queue) time.Time {
	var order []int
	for i, q := range queues {
		for range q.Count {
			order = append(order, i)
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	h := &jobs{}
	for seq, q := range order {
		h.items = append(h.items, job{due: start, seq: seq, queue: q})
	}
	heap.Init(h)
	slot := time.Duration(float64(time.Second) / rate)
	free, last := start, start
	for h.Len() > 0 {
		j := heap.Pop(h).(job)
		if w := queues[j.queue].Wait(j.due); w > 0 { // closed when due: snoozed at once
			j.due = j.due.Add(w)
			heap.Push(h, j)
			continue
		}
		now := free
		if j.due.After(now) {
			now = j.due
		}
		if w := queues[j.queue].Wait(now); w > 0 { // closed by the time its slot came
			j.due = now.Add(w)
			heap.Push(h, j)
			continue
		}
		last, free = now, now.Add(slot)
	}
	return last.Add(slot)
}

// job is one simulated message's dispatch job.
type job struct {
	due   time.Time
	seq   int
	queue int
}

// jobs is a heap of jobs, the earliest due (then the first queued) on top.
type jobs struct{ items []job }

func (h *jobs) Len() int { return len(h.items) }
func (h *jobs) Less(a, b int) bool {
	if c := h.items[a].due.Compare(h.items[b].due); c != 0 {
		return c < 0
	}
	return h.items[a].seq < h.items[b].seq
}
func (h *jobs) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *jobs) Push(x any)    { h.items = append(h.items, x.(job)) }
func (h *jobs) Pop() any {
	j := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return j
}

// TestEstimateAgainstSimulation holds Estimate within 10% of a minute-by-minute simulation for
// campaigns whose recipients span four US zones (and states with narrower laws), started at
// every hour of a day and with loads of a few hours to several days.
func TestEstimateAgainstSimulation(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 6, 3, 0, 0, 0, 0, time.UTC) // a Wednesday
	mixes := map[string][]quiethours.Queue{
		"four zones":                fourZones("", 2000),
		"four zones, campaign zone": fourZones("America/Chicago", 2000),
		"uneven, with state laws": {
			{Message: quiethours.Message{Zone: "America/New_York", RecipientZone: "America/New_York"}, Count: 5000},
			{Message: quiethours.Message{Zone: "America/New_York", RecipientZone: "America/Chicago", State: "TX"}, Count: 3000},
			{Message: quiethours.Message{Zone: "America/New_York", RecipientZone: "America/Denver"}, Count: 500},
			{Message: quiethours.Message{Zone: "America/New_York", RecipientZone: "America/Los_Angeles"}, Count: 1500},
			{Message: quiethours.Message{Zone: "America/New_York"}, Count: 200},
		},
	}
	for name, queues := range mixes {
		for _, rate := range []float64{0.05, 0.3, 2} {
			for h := 0; h < 24; h += 7 {
				start := base.Add(time.Duration(h)*time.Hour + 17*time.Minute)
				got, want := quiethours.Estimate(start, rate, queues), simulate(start, rate, queues)
				took := want.Sub(start)
				off := math.Abs(got.Sub(want).Seconds()) / took.Seconds()
				assert.LessOrEqual(t, off, 0.10, "%s at %g/s from %s: estimate %s, simulation %s (took %s)",
					name, rate, start.Format(time.RFC3339), got.Format(time.RFC3339), want.Format(time.RFC3339), took)
			}
		}
	}
}
