package deliver

import (
	"sync"

	"github.com/google/uuid"
)

// inFlight bounds the attempts running at once per endpoint in this process, so that a slow
// endpoint holds at most that many of the workers and the others keep delivering to everyone
// else.
type inFlight struct {
	mu    sync.Mutex
	max   int
	count map[uuid.UUID]int
}

func newInFlight(max int) *inFlight { return &inFlight{max: max, count: map[uuid.UUID]int{}} }

// acquire takes a place for endpoint, or answers false when it has none free.
func (f *inFlight) acquire(endpoint uuid.UUID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.count[endpoint] >= f.max {
		return false
	}
	f.count[endpoint]++
	return true
}

func (f *inFlight) release(endpoint uuid.UUID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.count[endpoint]--; f.count[endpoint] <= 0 {
		delete(f.count, endpoint)
	}
}
