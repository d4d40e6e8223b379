package ingest

import (
	"time"

	"github.com/google/uuid"
)

// Message statuses as messaging reports them.
const (
	statusQueued      = "queued"
	statusSending     = "sending"
	statusSent        = "sent"
	statusDelivered   = "delivered"
	statusUndelivered = "undelivered"
	statusFailed      = "failed"
)

// rank orders statuses: a message only moves forward, so a late or repeated report (a sent
// after its delivered) changes nothing. The three outcomes are final alike: the first wins.
func rank(status string) int {
	switch status {
	case statusSending:
		return 1
	case statusSent:
		return 2
	case statusDelivered, statusUndelivered, statusFailed:
		return 3
	}
	return 0 // queued, or unknown
}

// uncounted source kinds: a campaign's test copies and keyword confirmations (HELP answers
// too) are not the organization's messaging, so analytics never stores them.
func uncounted(kind string) bool { return kind == "test" || kind == "system" }

// report is what one event says about an outgoing message.
type report struct {
	kind, source, status string
	created              time.Time // message.created: when it was stored
	left                 time.Time // a status report: when it happened
	withdrawn            bool
}

// fact is a message as analytics keeps it.
type fact struct {
	kind      string
	campaign  *uuid.UUID
	status    string
	withdrawn bool
	created   *time.Time
	left      *time.Time
	day       time.Time
	hour      int
}

// same says f and o hold the same values.
func (f *fact) same(o *fact) bool {
	return f.kind == o.kind && f.status == o.status && f.withdrawn == o.withdrawn && f.day.Equal(o.day) && f.hour == o.hour &&
		equal(f.campaign, o.campaign, func(a, b uuid.UUID) bool { return a == b }) &&
		equal(f.created, o.created, time.Time.Equal) && equal(f.left, o.left, time.Time.Equal)
}

func equal[T any](a, b *T, eq func(T, T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return eq(*a, *b)
}

// counts is a message's contribution to its bucket (and to its campaign).
type counts struct{ total, sent, delivered, undelivered, failed int }

func (f *fact) counts() counts {
	if f == nil || f.withdrawn {
		return counts{}
	}
	c := counts{total: 1}
	switch f.status {
	case statusSent:
		c.sent = 1
	case statusDelivered:
		c.sent, c.delivered = 1, 1
	case statusUndelivered:
		c.sent, c.undelivered = 1, 1
	case statusFailed:
		c.failed = 1
	}
	return c
}

func (c counts) minus(o counts) counts {
	return counts{c.total - o.total, c.sent - o.sent, c.delivered - o.delivered, c.undelivered - o.undelivered, c.failed - o.failed}
}

func (c counts) zero() bool { return c == counts{} }

// merge is old with r applied.
func merge(old *fact, r report) fact {
	var f fact
	if old != nil {
		f = *old
	} else {
		f = fact{kind: r.kind, status: statusQueued}
		if r.kind == "campaign" {
			if c, err := uuid.Parse(r.source); err == nil {
				f.campaign = &c
			}
		}
	}
	if !r.created.IsZero() && (f.created == nil || r.created.Before(*f.created)) {
		t := r.created
		f.created = &t
	}
	if !r.left.IsZero() && (f.left == nil || r.left.Before(*f.left)) {
		t := r.left
		f.left = &t
	}
	if rank(r.status) > rank(f.status) {
		f.status, f.withdrawn = r.status, r.withdrawn
	}
	return f
}
