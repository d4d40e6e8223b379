package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

// message merges r into the message's fact and moves the rollups by the difference: out of
// the bucket it was in, into the bucket it is in now (they differ when the first status report
// moves it from its creation to the time it left). A message's time is when it left the
// queue, the earliest status report, else its creation; both are kept as the least seen, so
// the result does not depend on the order the events come in.
func (in *Ingester) message(ctx context.Context, tx pgx.Tx, org uuid.UUID, messageID string, r report) error {
	if uncounted(r.kind) {
		return nil
	}
	id, err := uuid.Parse(messageID)
	if err != nil {
		return nil // not a message of ours: nothing to count
	}
	old, err := readFact(ctx, tx, org, id)
	if err != nil {
		return err
	}
	next := merge(old, r)
	at := next.left
	if at == nil {
		at = next.created
	}
	if at == nil {
		return errors.New("message event without a time")
	}
	if next.day, next.hour, err = in.local(ctx, org, *at); err != nil {
		return err
	}
	if old != nil && old.same(&next) {
		return nil
	}
	// The fact and the rollups it moves are written in one round trip.
	b := &pgx.Batch{}
	writeFact(b, org, id, &next)
	before, after := old.counts(), next.counts()
	if old != nil && (!old.day.Equal(next.day) || old.hour != next.hour) {
		addHour(b, org, old.day, old.hour, counts{}.minus(before), 0)
		before = counts{}
	}
	if d := after.minus(before); !d.zero() {
		addHour(b, org, next.day, next.hour, d, 0)
	}
	if next.campaign != nil {
		if d := after.minus(old.counts()); !d.zero() {
			addCampaignOutcomes(b, org, *next.campaign, d)
		}
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store message %s and its counts: %w", id, err)
	}
	return nil
}

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

// readFact locks the message's fact, making a placeholder (status "") when there is none yet,
// so two events of one message applied at once by two members of the group take turns
// instead of both starting from nothing. It returns nil for a message not seen before.
func readFact(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) (*fact, error) {
	var f fact
	var hour int16
	err := tx.QueryRow(ctx, `INSERT INTO messages AS m (organization_id, id, source_kind, status, day, hour)
		VALUES ($1, $2, '', '', '1970-01-01', 0)
		ON CONFLICT (organization_id, id) DO UPDATE SET status = m.status
		RETURNING source_kind, campaign_id, status, withdrawn, created_at, left_at, day, hour`, org, id).
		Scan(&f.kind, &f.campaign, &f.status, &f.withdrawn, &f.created, &f.left, &f.day, &hour)
	if err != nil {
		return nil, fmt.Errorf("lock message %s: %w", id, err)
	}
	if f.status == "" {
		return nil, nil
	}
	f.hour = int(hour)
	f.day = f.day.UTC()
	f.created, f.left = utc(f.created), utc(f.left)
	return &f, nil
}

// utc drops the location PostgreSQL's answer came in, so facts compare by value.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func writeFact(b *pgx.Batch, org, id uuid.UUID, f *fact) {
	b.Queue(`INSERT INTO messages (organization_id, id, source_kind, campaign_id, status, withdrawn, created_at, left_at, day, hour)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (organization_id, id) DO UPDATE SET source_kind = excluded.source_kind, campaign_id = excluded.campaign_id,
			status = excluded.status, withdrawn = excluded.withdrawn,
			created_at = excluded.created_at, left_at = excluded.left_at, day = excluded.day, hour = excluded.hour`,
		org, id, f.kind, f.campaign, f.status, f.withdrawn, f.created, f.left, f.day, int16(f.hour))
}

// addHour queues the addition of d (and of received inbound messages) to org's counts of one
// local hour, as a pending change (Fold).
func addHour(b *pgx.Batch, org uuid.UUID, day time.Time, hour int, d counts, received int) {
	b.Queue(`INSERT INTO pending_counts (organization_id, day, hour, total, sent, delivered, undelivered, failed, received)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		org, day, int16(hour), d.total, d.sent, d.delivered, d.undelivered, d.failed, received)
}

// received counts an inbound message in the hour it arrived.
func (in *Ingester) received(ctx context.Context, tx pgx.Tx, org uuid.UUID, at time.Time) error {
	day, hour, err := in.local(ctx, org, at)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	addHour(b, org, day, hour, counts{}, 1)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("count inbound message: %w", err)
	}
	return nil
}
