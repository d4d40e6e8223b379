package outbox

import "context"

// TakeWaiting is the relay's statement, for the test of its plan.
const TakeWaiting = takeWaiting

// PublishOnce runs one pass of the relay and returns how many rows it published.
func (r *Relay) PublishOnce(ctx context.Context) (int, error) { return r.publish(ctx) }

// From is where the relay's next pass starts, unless it is a rescan.
func (r *Relay) From() int64 { return r.from }

// LateIDs is how far below its last batch a pass looks.
const LateIDs = lateIDs
