package outbox

import (
	"context"
	"time"
)

// backoff is the wait after the n-th consecutive failure (n >= 1).
func (s settings) backoff(n int64) time.Duration {
	d := s.retryMin
	for i := int64(1); i < n && d < s.retryMax; i++ {
		d *= 2
	}
	return min(d, s.retryMax)
}

// sleep waits for d or until ctx is done, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
