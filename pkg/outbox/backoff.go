package outbox

import "time"

// backoff is the wait after the n-th consecutive failure (n >= 1).
func (s settings) backoff(n int64) time.Duration {
	d := s.retryMin
	for i := int64(1); i < n && d < s.retryMax; i++ {
		d *= 2
	}
	return min(d, s.retryMax)
}
