package quiethours

import (
	"sync"
	"time"
)

// locations caches the zones loaded so far by name: time.LoadLocation opens and parses the
// zone's file on every call, and a campaign asks for its recipients' zones once per recipient
// (a large share of a fan-out's CPU) and dispatch for two zones per message. Only
// zones that loaded are kept, so the cache is bounded by the zone database.
var locations sync.Map // name → *time.Location

// Location is time.LoadLocation, cached.
func Location(tz string) (*time.Location, error) {
	if l, ok := locations.Load(tz); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(tz)
	if err != nil {
		return nil, err
	}
	locations.Store(tz, l)
	return l, nil
}
