package outbox

import (
	"log/slog"
	"time"
)

// Option tunes a Relay or a Consumer; each option says which it applies to.
type Option func(*settings)

type settings struct {
	log           *slog.Logger
	batchSize     int
	pollInterval  time.Duration
	maxLen        int64
	retention     time.Duration
	retryMin      time.Duration
	retryMax      time.Duration
	claimIdle     time.Duration
	maxDeliveries int64
	types         map[string]bool    // nil: every type
	idempotent    map[string]bool    // types applied without a processed_events row
	keep          func(Message) bool // nil: every event of types
	partitions    int
	partitionKey  func(Message) string
	batch         BatchHandler
}

func newSettings(opts []Option) settings {
	s := settings{
		log:           slog.Default(),
		batchSize:     100,
		pollInterval:  100 * time.Millisecond,
		maxLen:        1_000_000,
		retention:     DefaultRetention,
		retryMin:      time.Second,
		retryMax:      time.Minute,
		claimIdle:     30 * time.Second,
		maxDeliveries: 20,
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// WithLogger sets where a Relay or Consumer logs failures (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) {
		if l != nil {
			s.log = l
		}
	}
}

// WithBatchSize sets how many rows a Relay publishes per transaction, and how many entries a
// Consumer reads per call (default 100).
func WithBatchSize(n int) Option {
	return func(s *settings) {
		if n > 0 {
			s.batchSize = n
		}
	}
}

// WithPollInterval sets how long an idle Relay waits before looking for new rows again
// (default 100ms): the publishing latency of an event enqueued while the relay was idle.
func WithPollInterval(d time.Duration) Option {
	return func(s *settings) {
		if d > 0 {
			s.pollInterval = d
		}
	}
}

// WithMaxLen caps, approximately (MAXLEN ~), the length of the stream a Relay publishes to and
// of the dead-letter stream a Consumer writes (default 1,000,000 entries). A consumer group
// that falls further behind than this loses the trimmed entries, so keep it generous.
func WithMaxLen(n int64) Option {
	return func(s *settings) {
		if n > 0 {
			s.maxLen = n
		}
	}
}

// DefaultRetention is how long published outbox rows and processed_events rows are kept: an
// event older than that can no longer be published or replayed from the outbox.
const DefaultRetention = 7 * 24 * time.Hour

// WithRetention sets how old a published outbox row (Relay) or processed_events row
// (Consumer) must be before Run deletes it (default 7 days); 0 keeps rows forever.
func WithRetention(d time.Duration) Option {
	return func(s *settings) {
		if d >= 0 {
			s.retention = d
		}
	}
}

// WithRetryBackoff sets the wait after a failure, doubling from first up to limit with each
// further consecutive failure (default 1s up to 1m). A Consumer applies it per entry when a
// handler fails, and looks for entries due for a retry every first (at most every second);
// both apply it to their loop when PostgreSQL or Redis fails.
func WithRetryBackoff(first, limit time.Duration) Option {
	return func(s *settings) {
		if first > 0 && limit >= first {
			s.retryMin, s.retryMax = first, limit
		}
	}
}

// WithClaimIdle sets how long an entry delivered to another consumer of the group must sit
// unacknowledged before a Consumer takes it over (default 30s): the time to recover the work
// of a consumer that died. A handler running longer than this may run concurrently on a
// second consumer; processed_events still lets only one of them commit.
func WithClaimIdle(d time.Duration) Option {
	return func(s *settings) {
		if d > 0 {
			s.claimIdle = d
		}
	}
}

// WithMaxDeliveries sets how many deliveries an entry gets before a Consumer whose handler
// fails on it moves it to the dead-letter stream (default 20, about 15 minutes of retries
// with the default backoff). Every delivery counts, including those that failed because the
// database was down.
func WithMaxDeliveries(n int) Option {
	return func(s *settings) {
		if n > 0 {
			s.maxDeliveries = int64(n)
		}
	}
}

// WithTypes makes a Consumer handle only events of these types; the others are acknowledged
// at once, with no transaction and no processed_events row. A group that reads a busy stream
// for one kind of event (polls wants message.received, not the two status events of every
// message sent) then costs the stream's producer's database nothing for the rest.
func WithTypes(types ...string) Option {
	return func(s *settings) {
		s.types = make(map[string]bool, len(types))
		for _, t := range types {
			s.types[t] = true
		}
	}
}

// WithIdempotent names the event types a Consumer's handler applies idempotently: applying an
// event of one of them again, after or while another member applies it, changes nothing (the
// handler moves a state that only goes forward, under a lock of what it reads). Such events
// get no processed_events row: a redelivered one is applied again, to no effect. For a group
// that follows every message's status reports, that row is most of what the group costs the
// database per event.
func WithIdempotent(types ...string) Option {
	return func(s *settings) {
		s.idempotent = make(map[string]bool, len(types))
		for _, t := range types {
			s.idempotent[t] = true
		}
	}
}

// WithFilter makes a Consumer handle only the events keep answers true for (after
// WithTypes); the others are acknowledged at once, as events of other types are. For a group
// that wants a few events of a busy type (polls wants the status events of poll messages only):
// keep reads the payload, the producer's database is not asked.
func WithFilter(keep func(Message) bool) Option {
	return func(s *settings) { s.keep = keep }
}

// WithPartitions makes a Consumer apply a read's events in n transactions at once, the events
// of one key (key(m)) in the same transaction and in stream order. For handlers whose events
// of different keys touch different rows (one contact's replies, say): a read's work is then
// not one transaction's round trips one after another. A partition that fails returns its
// entries to the stream like a failed read; the other partitions' events are recorded as
// processed and skipped when redelivered.
func WithPartitions(n int, key func(Message) string) Option {
	return func(s *settings) {
		if n > 1 && key != nil {
			s.partitions, s.partitionKey = n, key
		}
	}
}

// WithBatchHandler makes a Consumer apply each read's new events with h in one call, after
// recording them all as processed in one statement, instead of one savepoint and one handler
// call per event: for consumers whose work per event is a few statements that h can make once
// for the whole read. When h (or the commit) fails, the read is applied again event by event
// with the Consumer's Handler, so one bad event fails alone, as without this option.
func WithBatchHandler(h BatchHandler) Option {
	return func(s *settings) { s.batch = h }
}
