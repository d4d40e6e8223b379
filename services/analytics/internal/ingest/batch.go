package ingest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/outbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/analytics/internal/linkpreview"
)

// key names one message of one organization.
type key struct{ org, id uuid.UUID }

func (k key) compare(o key) int {
	if c := slices.Compare(k.org[:], o.org[:]); c != 0 {
		return c
	}
	return slices.Compare(k.id[:], o.id[:])
}

// bucket is one local hour of an organization, or (campaign set) one campaign.
type bucket struct {
	org      uuid.UUID
	day      time.Time
	hour     int
	campaign uuid.UUID
}

// changes are the count changes of a batch, summed per bucket, and its clicks per local day.
type changes struct {
	counts   map[bucket]counts
	received map[bucket]int
	clicks   map[bucket][2]int // human, previews (hour unused)
}

func (c *changes) add(b bucket, d counts) {
	if d.zero() {
		return
	}
	s := c.counts[b]
	c.counts[b] = counts{s.total + d.total, s.sent + d.sent, s.delivered + d.delivered, s.undelivered + d.undelivered, s.failed + d.failed}
}

// applyMessaging applies ms in order: each message's reports merged into its fact, and the
// rollups moved by the difference between each fact before the batch and after it (out of the
// bucket it was in, into the one it is in now), which is nothing for a repeated or late report.
// A message's time is when it left the queue (its earliest status report), else its creation;
// both are kept as the least seen, so the result does not depend on the events' order.
func (in *Ingester) applyMessaging(ctx context.Context, tx pgx.Tx, ms []outbox.Message) error {
	type keyed struct {
		k key
		r report
	}
	var reports []keyed
	ch := changes{counts: map[bucket]counts{}, received: map[bucket]int{}, clicks: map[bucket][2]int{}}
	for _, m := range ms {
		// created reports one message of m's organization from its creation.
		created := func(ev *eventsv1.MessageCreated) {
			r := report{kind: ev.GetSourceKind(), source: ev.GetSourceId(), status: ev.GetStatus(), created: ev.GetCreatedAt().AsTime()}
			if id, err := uuid.Parse(ev.GetMessageId()); err == nil && !uncounted(r.kind) {
				reports = append(reports, keyed{key{m.OrgID, id}, r})
			}
		}
		// changed reports one status change of one of m's organization's messages.
		changed := func(ev *eventsv1.MessageStatusChanged) {
			r := report{kind: ev.GetSourceKind(), source: ev.GetSourceId(), status: ev.GetStatus(), left: ev.GetOccurredAt().AsTime(),
				withdrawn: ev.GetStatus() == statusFailed && apierr.Withdrawn(ev.GetErrorCode())}
			if id, err := uuid.Parse(ev.GetMessageId()); err == nil && !uncounted(r.kind) {
				reports = append(reports, keyed{key{m.OrgID, id}, r})
			}
		}
		switch m.Type {
		case eventMessagesCreated:
			var ev eventsv1.MessagesCreated
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			for _, c := range ev.GetMessages() {
				created(c)
			}
		case eventMessageCreated:
			var ev eventsv1.MessageCreated
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			created(&ev)
		case eventStatusChanged:
			var ev eventsv1.MessageStatusChanged
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			changed(&ev)
		case eventStatusesChanged:
			var ev eventsv1.MessagesStatusChanged
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			for _, c := range ev.GetChanges() {
				changed(c)
			}
		case eventMessageReceived:
			var ev eventsv1.MessageReceived
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			day, hour, err := in.local(ctx, m.OrgID, ev.GetReceivedAt().AsTime())
			if err != nil {
				return err
			}
			ch.received[bucket{org: m.OrgID, day: day, hour: hour}]++
		case eventLinkClicked:
			var ev eventsv1.LinkClicked
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			day, _, err := in.local(ctx, m.OrgID, ev.GetClickedAt().AsTime())
			if err != nil {
				return err
			}
			b, n := bucket{org: m.OrgID, day: day}, ch.clicks[bucket{org: m.OrgID, day: day}]
			if linkpreview.IsFetcher(ev.GetUserAgent()) {
				n[1]++
			} else {
				n[0]++
			}
			ch.clicks[b] = n
		}
	}

	keys := make([]key, 0, len(reports))
	for _, r := range reports {
		keys = append(keys, r.k)
	}
	slices.SortFunc(keys, key.compare) // one lock order for every member
	keys = slices.Compact(keys)

	// Each message's fact as if it were new: a message not seen before is stored as that, in
	// the insert that also finds out which ones were seen before.
	fresh := make(map[key]*fact, len(keys))
	for _, r := range reports {
		next := merge(fresh[r.k], r.r)
		fresh[r.k] = &next
	}
	for _, k := range keys {
		if err := in.place(ctx, k, fresh[k]); err != nil {
			return err
		}
	}
	inserted, err := insertFacts(ctx, tx, keys, fresh)
	if err != nil {
		return err
	}
	var seen []key
	for _, k := range keys {
		if inserted[k] {
			f := fresh[k]
			ch.add(bucket{org: k.org, day: f.day, hour: f.hour}, f.counts())
			if f.campaign != nil {
				ch.add(bucket{org: k.org, campaign: *f.campaign}, f.counts())
			}
		} else {
			seen = append(seen, k)
		}
	}

	before, err := lockFacts(ctx, tx, seen)
	if err != nil {
		return err
	}
	after := make(map[key]*fact, len(before))
	for k, f := range before {
		after[k] = f
	}
	for _, r := range reports {
		if !inserted[r.k] {
			next := merge(after[r.k], r.r)
			after[r.k] = &next
		}
	}
	var changed []key
	for _, k := range seen {
		old, next := before[k], after[k]
		if err := in.place(ctx, k, next); err != nil {
			return err
		}
		if old != nil && old.same(next) {
			continue
		}
		changed = append(changed, k)
		prev, now := old.counts(), next.counts()
		if old != nil {
			ch.add(bucket{org: k.org, day: old.day, hour: old.hour}, counts{}.minus(prev))
		}
		ch.add(bucket{org: k.org, day: next.day, hour: next.hour}, now)
		if next.campaign != nil {
			ch.add(bucket{org: k.org, campaign: *next.campaign}, now.minus(prev))
		}
	}
	if err := writeFacts(ctx, tx, changed, after); err != nil {
		return err
	}
	if err := ch.write(ctx, tx); err != nil {
		return err
	}
	return nil
}

// place sets f's local day and hour: those of when it left the queue (its earliest status
// report), else of its creation.
func (in *Ingester) place(ctx context.Context, k key, f *fact) error {
	at := f.left
	if at == nil {
		at = f.created
	}
	if at == nil {
		return fmt.Errorf("message %s: an event without a time", k.id)
	}
	var err error
	f.day, f.hour, err = in.local(ctx, k.org, *at)
	return err
}

// insertFacts stores the facts of keys (sorted, distinct) of messages not seen before, in one
// statement, and answers which ones it stored. A message seen before keeps its fact: another
// batch's uncommitted insert of it is waited for, then left to lockFacts.
func insertFacts(ctx context.Context, tx pgx.Tx, keys []key, facts map[key]*fact) (map[key]bool, error) {
	out := make(map[key]bool, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `INSERT INTO messages (organization_id, id, source_kind, campaign_id, status, withdrawn, created_at, left_at, day, hour)
		SELECT o, i, k, c, s, w, cr, l, d, h FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::text[], $6::boolean[],
			$7::timestamptz[], $8::timestamptz[], $9::date[], $10::smallint[]) WITH ORDINALITY AS t(o, i, k, c, s, w, cr, l, d, h, n)
		ORDER BY n
		ON CONFLICT (organization_id, id) DO NOTHING
		RETURNING organization_id, id`, factColumns(keys, facts)...)
	if err != nil {
		return nil, fmt.Errorf("store %d new messages: %w", len(keys), err)
	}
	var k key
	if _, err := pgx.ForEachRow(rows, []any{&k.org, &k.id}, func() error {
		out[k] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store %d new messages: %w", len(keys), err)
	}
	return out, nil
}

// lockFacts locks the stored facts of keys (sorted, distinct) and returns them.
func lockFacts(ctx context.Context, tx pgx.Tx, keys []key) (map[key]*fact, error) {
	out := make(map[key]*fact, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	orgs, ids := make([]uuid.UUID, len(keys)), make([]uuid.UUID, len(keys))
	for i, k := range keys {
		orgs[i], ids[i] = k.org, k.id
	}
	rows, err := tx.Query(ctx, `SELECT organization_id, id, source_kind, campaign_id, status, withdrawn, created_at, left_at, day, hour
		FROM messages WHERE (organization_id, id) IN (SELECT * FROM unnest($1::uuid[], $2::uuid[]))
		ORDER BY organization_id, id FOR UPDATE`, orgs, ids)
	if err != nil {
		return nil, fmt.Errorf("lock %d messages: %w", len(keys), err)
	}
	var k key
	var f fact
	var hour int16
	_, err = pgx.ForEachRow(rows, []any{&k.org, &k.id, &f.kind, &f.campaign, &f.status, &f.withdrawn, &f.created, &f.left, &f.day, &hour}, func() error {
		g := f
		g.hour, g.day = int(hour), f.day.UTC()
		g.created, g.left = utc(f.created), utc(f.left)
		if f.campaign != nil {
			c := *f.campaign
			g.campaign = &c
		}
		out[k] = &g
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock %d messages: %w", len(keys), err)
	}
	return out, nil
}

// utc drops the location PostgreSQL's answer came in, so facts compare by value.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func nullTime(t *time.Time) pgtype.Timestamptz {
	if t == nil {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: *t, Valid: true}
}

func nullUUID(id *uuid.UUID) pgtype.UUID {
	if id == nil {
		return pgtype.UUID{}
	}
	return pgtype.UUID{Bytes: *id, Valid: true}
}

// factColumns are the facts of keys as the arrays of insertFacts' and writeFacts' statements.
func factColumns(keys []key, facts map[key]*fact) []any {
	n := len(keys)
	orgs, ids, campaigns := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]pgtype.UUID, n)
	kinds, statuses, withdrawn := make([]string, n), make([]string, n), make([]bool, n)
	created, left, days, hours := make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n), make([]time.Time, n), make([]int16, n)
	for i, k := range keys {
		f := facts[k]
		orgs[i], ids[i], campaigns[i] = k.org, k.id, nullUUID(f.campaign)
		kinds[i], statuses[i], withdrawn[i] = f.kind, f.status, f.withdrawn
		created[i], left[i], days[i], hours[i] = nullTime(f.created), nullTime(f.left), f.day, int16(f.hour)
	}
	return []any{orgs, ids, kinds, campaigns, statuses, withdrawn, created, left, days, hours}
}

// writeFacts stores the facts of keys, seen before, in one statement.
func writeFacts(ctx context.Context, tx pgx.Tx, keys []key, facts map[key]*fact) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO messages (organization_id, id, source_kind, campaign_id, status, withdrawn, created_at, left_at, day, hour)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::text[], $6::boolean[], $7::timestamptz[],
			$8::timestamptz[], $9::date[], $10::smallint[])
		ON CONFLICT (organization_id, id) DO UPDATE SET source_kind = excluded.source_kind, campaign_id = excluded.campaign_id,
			status = excluded.status, withdrawn = excluded.withdrawn, created_at = excluded.created_at, left_at = excluded.left_at,
			day = excluded.day, hour = excluded.hour`,
		factColumns(keys, facts)...)
	if err != nil {
		return fmt.Errorf("store %d messages: %w", len(keys), err)
	}
	return nil
}

// write appends the count changes to pending_counts (Fold moves them into the rollups) and
// adds the clicks to their days, one statement each.
func (c *changes) write(ctx context.Context, tx pgx.Tx) error {
	type row struct {
		b        bucket
		d        counts
		received int
	}
	var rows []row
	for b, d := range c.counts {
		rows = append(rows, row{b: b, d: d, received: c.received[b]})
	}
	for b, n := range c.received {
		if _, ok := c.counts[b]; !ok {
			rows = append(rows, row{b: b, received: n})
		}
	}
	if len(rows) > 0 {
		n := len(rows)
		orgs, campaigns := make([]uuid.UUID, n), make([]pgtype.UUID, n)
		days, hours := make([]pgtype.Date, n), make([]pgtype.Int2, n)
		vals := make([][]int32, 6)
		for i := range vals {
			vals[i] = make([]int32, n)
		}
		for i, r := range rows {
			orgs[i] = r.b.org
			if r.b.campaign != uuid.Nil {
				campaigns[i] = pgtype.UUID{Bytes: r.b.campaign, Valid: true}
			} else {
				days[i], hours[i] = pgtype.Date{Time: r.b.day, Valid: true}, pgtype.Int2{Int16: int16(r.b.hour), Valid: true}
			}
			for j, v := range []int{r.d.total, r.d.sent, r.d.delivered, r.d.undelivered, r.d.failed, r.received} {
				vals[j][i] = int32(v)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO pending_counts (organization_id, day, hour, campaign_id, total, sent, delivered, undelivered, failed, received)
			SELECT * FROM unnest($1::uuid[], $2::date[], $3::smallint[], $4::uuid[], $5::int[], $6::int[], $7::int[], $8::int[], $9::int[], $10::int[])`,
			orgs, days, hours, campaigns, vals[0], vals[1], vals[2], vals[3], vals[4], vals[5])
		if err != nil {
			return fmt.Errorf("append %d count changes: %w", n, err)
		}
	}
	if len(c.clicks) == 0 {
		return nil
	}
	var orgs []uuid.UUID
	var days []time.Time
	var human, previews []int32
	bs := make([]bucket, 0, len(c.clicks))
	for b := range c.clicks {
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(a, b bucket) int { // one lock order for every member
		return cmp.Or(slices.Compare(a.org[:], b.org[:]), a.day.Compare(b.day))
	})
	for _, b := range bs {
		n := c.clicks[b]
		orgs, days, human, previews = append(orgs, b.org), append(days, b.day), append(human, int32(n[0])), append(previews, int32(n[1]))
	}
	_, err := tx.Exec(ctx, `INSERT INTO click_days AS d (organization_id, day, human, previews)
		SELECT * FROM unnest($1::uuid[], $2::date[], $3::int[], $4::int[])
		ON CONFLICT (organization_id, day) DO UPDATE SET human = d.human + excluded.human, previews = d.previews + excluded.previews`,
		orgs, days, human, previews)
	if err != nil {
		return fmt.Errorf("count %d days of clicks: %w", len(bs), err)
	}
	return nil
}
