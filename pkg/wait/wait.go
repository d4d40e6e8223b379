// Package wait sleeps the way every loop that retries, backs off or paces needs to: for a
// while, or until a moment, cut short when its context ends.
package wait

import (
	"context"
	"time"
)

// For waits d or until ctx is done, and reports whether ctx is still live.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Until waits until at or until ctx is done, and reports whether ctx is still live.
func Until(ctx context.Context, at time.Time) bool {
	return For(ctx, time.Until(at))
}
