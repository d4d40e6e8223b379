package server

import (
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

// zoneCountsTTL is how long, at least, a campaign's count of its queued recipients per zone
// serves its completion estimate. Every GET of a campaign estimates, a dashboard polls it while
// the campaign sends, and each count reads every recipient of the campaign. The estimate runs
// from when the count was taken, so one kept a moment later gives the same time. A count that
// took long (a large campaign's) serves zoneCountsCost times as long as it took, so that a
// polled campaign's counts take a bounded share of the database's time whatever its size.
const (
	zoneCountsTTL  = 2 * time.Second
	zoneCountsCost = 20
)

// maxZoneCounts bounds the counts kept; past it, lapsed ones are dropped.
const maxZoneCounts = 1000

// zoneCounts keeps each campaign's last count of its queued recipients per zone, for the
// campaign as it was (its status and submission) when counted.
type zoneCounts struct {
	mu sync.Mutex
	m  map[uuid.UUID]zoneCount
}

type zoneCount struct {
	status     string
	submission int32
	at         time.Time
	ttl        time.Duration
	groups     []store.ZoneCount
}

// get returns c's count if it still serves at now, and when it was taken.
func (z *zoneCounts) get(c *store.Campaign, now time.Time) ([]store.ZoneCount, time.Time, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	e, ok := z.m[c.ID]
	if !ok || e.status != c.Status || e.submission != c.Submission || now.Sub(e.at) >= e.ttl || now.Before(e.at) {
		return nil, time.Time{}, false
	}
	return e.groups, e.at, true
}

// put keeps c's count, taken at at in took.
func (z *zoneCounts) put(c *store.Campaign, groups []store.ZoneCount, at time.Time, took time.Duration) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.m == nil {
		z.m = make(map[uuid.UUID]zoneCount)
	}
	if len(z.m) >= maxZoneCounts {
		for id, e := range z.m {
			if at.Sub(e.at) >= e.ttl {
				delete(z.m, id)
			}
		}
	}
	ttl := max(zoneCountsTTL, zoneCountsCost*took)
	z.m[c.ID] = zoneCount{status: c.Status, submission: c.Submission, at: at, ttl: ttl, groups: groups}
}
