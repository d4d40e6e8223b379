// Package store reads analytics' rollups. Every query filters on the organization and a range
// of its local days, both ends included; the tables' keys lead with the organization, so an
// answer costs the organization's rows in the range (at most 24 a day of messages).
package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store reads the analytics schema.
type Store struct{ pool *pgxpool.Pool }

// New returns a Store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Range is a span of local days, both included.
type Range struct{ Start, End time.Time }

// Messages are outgoing message counts (and inbound ones).
type Messages struct {
	Total, Sent, Delivered, Undelivered, Failed, Received int32
}

// Campaigns are campaigns created in a range by status.
type Campaigns struct {
	Total, Completed, Sending, Scheduled, Failed int32
}

// Clicks are short-link follows.
type Clicks struct{ Human, Previews int32 }

// hours are org's ($1) hourly counts of the days $2 to $3: the folded rollups and the changes
// still pending (ingest.Fold), whose sums are the same either way.
const hours = `(SELECT day, hour, total, sent, delivered, undelivered, failed, received
		FROM message_hours WHERE organization_id = $1 AND day BETWEEN $2 AND $3
	UNION ALL
	SELECT day, hour, total, sent, delivered, undelivered, failed, received
		FROM pending_counts WHERE organization_id = $1 AND campaign_id IS NULL AND day BETWEEN $2 AND $3) hours`

// Overview is the range's sums.
type Overview struct {
	Messages  Messages
	Campaigns Campaigns
	Clicks    Clicks
}

// Overview sums org's range in one round trip.
func (s *Store) Overview(ctx context.Context, org uuid.UUID, r Range) (Overview, error) {
	var o Overview
	m, c, k := &o.Messages, &o.Campaigns, &o.Clicks
	// Each aggregate without GROUP BY is one row, even over no rows.
	err := s.pool.QueryRow(ctx, `SELECT * FROM
		(SELECT coalesce(sum(total), 0)::int, coalesce(sum(sent), 0)::int, coalesce(sum(delivered), 0)::int,
				coalesce(sum(undelivered), 0)::int, coalesce(sum(failed), 0)::int, coalesce(sum(received), 0)::int
			FROM `+hours+`) m
		CROSS JOIN (SELECT count(*)::int, (count(*) FILTER (WHERE status = 'completed'))::int,
				(count(*) FILTER (WHERE status = 'sending'))::int, (count(*) FILTER (WHERE status = 'scheduled'))::int,
				(count(*) FILTER (WHERE status = 'failed'))::int
			FROM campaigns WHERE organization_id = $1 AND version >= 0 AND created_day BETWEEN $2 AND $3) c
		CROSS JOIN (SELECT coalesce(sum(human), 0)::int, coalesce(sum(previews), 0)::int
			FROM click_days WHERE organization_id = $1 AND day BETWEEN $2 AND $3) k`,
		org, r.Start, r.End).Scan(&m.Total, &m.Sent, &m.Delivered, &m.Undelivered, &m.Failed, &m.Received,
		&c.Total, &c.Completed, &c.Sending, &c.Scheduled, &c.Failed, &k.Human, &k.Previews)
	if err != nil {
		return Overview{}, fmt.Errorf("read overview: %w", err)
	}
	return o, nil
}

// MessageDays returns org's message counts per local day of the range that has any.
func (s *Store) MessageDays(ctx context.Context, org uuid.UUID, r Range) (map[time.Time]Messages, error) {
	rows, err := s.pool.Query(ctx, `SELECT day, sum(total)::int, sum(sent)::int, sum(delivered)::int, sum(undelivered)::int,
			sum(failed)::int, sum(received)::int
		FROM `+hours+` GROUP BY day`, org, r.Start, r.End)
	if err != nil {
		return nil, fmt.Errorf("read message days: %w", err)
	}
	out := map[time.Time]Messages{}
	var day time.Time
	var m Messages
	_, err = pgx.ForEachRow(rows, []any{&day, &m.Total, &m.Sent, &m.Delivered, &m.Undelivered, &m.Failed, &m.Received}, func() error {
		out[day.UTC()] = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read message days: %w", err)
	}
	return out, nil
}

// CampaignDays returns org's campaigns created per local day of the range, by status now.
func (s *Store) CampaignDays(ctx context.Context, org uuid.UUID, r Range) (map[time.Time]Campaigns, error) {
	rows, err := s.pool.Query(ctx, `SELECT created_day, count(*)::int, (count(*) FILTER (WHERE status = 'completed'))::int,
			(count(*) FILTER (WHERE status = 'sending'))::int, (count(*) FILTER (WHERE status = 'scheduled'))::int,
			(count(*) FILTER (WHERE status = 'failed'))::int
		FROM campaigns WHERE organization_id = $1 AND version >= 0 AND created_day BETWEEN $2 AND $3
		GROUP BY created_day`, org, r.Start, r.End)
	if err != nil {
		return nil, fmt.Errorf("read campaign days: %w", err)
	}
	out := map[time.Time]Campaigns{}
	var day time.Time
	var c Campaigns
	_, err = pgx.ForEachRow(rows, []any{&day, &c.Total, &c.Completed, &c.Sending, &c.Scheduled, &c.Failed}, func() error {
		out[day.UTC()] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read campaign days: %w", err)
	}
	return out, nil
}

// Campaign is a campaign with its message outcomes.
type Campaign struct {
	ID                      uuid.UUID
	Name, Status            string
	TotalCount              int32
	Sent, Delivered, Failed int32
	CreatedAt               time.Time
	CompletedAt             *time.Time
}

// DeliveryRate is delivered / sent × 100, the campaign's own rate (0 before anything is sent).
func (c *Campaign) DeliveryRate() float64 { return Rate(c.Delivered, c.Sent) }

// Rate is part / whole × 100, 0 when whole is 0.
func Rate(part, whole int32) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole) * 100
}

const campaignColumns = `id, name, status, total_count, sent, delivered, failed, created_at, completed_at`

// campaignsIn are org's ($1) campaigns created on the days $2 to $3 with their outcomes: the
// folded ones and those still pending (ingest.Fold).
const campaignsIn = `(SELECT c.id, c.name, c.status, c.total_count, c.sent + coalesce(p.sent, 0) AS sent,
		c.delivered + coalesce(p.delivered, 0) AS delivered, c.failed + coalesce(p.failed, 0) AS failed,
		c.created_at, c.completed_at
	FROM campaigns c LEFT JOIN (
		SELECT campaign_id, sum(sent)::int AS sent, sum(delivered)::int AS delivered, sum(failed)::int AS failed
		FROM pending_counts WHERE organization_id = $1 AND campaign_id IS NOT NULL GROUP BY campaign_id) p ON p.campaign_id = c.id
	WHERE c.organization_id = $1 AND c.version >= 0 AND c.created_day BETWEEN $2 AND $3) c`

func scanCampaigns(rows pgx.Rows, what string) ([]Campaign, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Campaign, error) {
		var c Campaign
		err := r.Scan(&c.ID, &c.Name, &c.Status, &c.TotalCount, &c.Sent, &c.Delivered, &c.Failed, &c.CreatedAt, &c.CompletedAt)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// TopCampaigns returns up to limit of org's completed campaigns created in the range, best
// delivery rate first, then most delivered, then newest.
func (s *Store) TopCampaigns(ctx context.Context, org uuid.UUID, r Range, limit int) ([]Campaign, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+campaignColumns+` FROM `+campaignsIn+` WHERE status = 'completed'
		ORDER BY CASE WHEN sent = 0 THEN 0 ELSE delivered::float8 / sent END DESC, delivered DESC, created_at DESC, id
		LIMIT $4`, org, r.Start, r.End, limit)
	if err != nil {
		return nil, fmt.Errorf("read top campaigns: %w", err)
	}
	return scanCampaigns(rows, "read top campaigns")
}

// Campaigns returns org's campaigns created in the range, newest first.
func (s *Store) Campaigns(ctx context.Context, org uuid.UUID, r Range) ([]Campaign, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+campaignColumns+` FROM `+campaignsIn+` ORDER BY created_at DESC, id`, org, r.Start, r.End)
	if err != nil {
		return nil, fmt.Errorf("read campaigns: %w", err)
	}
	return scanCampaigns(rows, "read campaigns")
}

// Sends are messages the carrier took and how many of them were delivered.
type Sends struct{ Sent, Delivered int32 }

// SendTimes returns org's sends of the range by local hour (0-23) and by local day of the
// week (0 Sunday ... 6 Saturday), every bucket present.
func (s *Store) SendTimes(ctx context.Context, org uuid.UUID, r Range) (byHour [24]Sends, byDay [7]Sends, err error) {
	rows, err := s.pool.Query(ctx, `SELECT extract(dow FROM day)::int, hour, sum(sent)::int, sum(delivered)::int
		FROM `+hours+` GROUP BY 1, 2`, org, r.Start, r.End)
	if err != nil {
		return byHour, byDay, fmt.Errorf("read send times: %w", err)
	}
	var dow, hour int32
	var n Sends
	_, err = pgx.ForEachRow(rows, []any{&dow, &hour, &n.Sent, &n.Delivered}, func() error {
		byHour[hour].Sent += n.Sent
		byHour[hour].Delivered += n.Delivered
		byDay[dow].Sent += n.Sent
		byDay[dow].Delivered += n.Delivered
		return nil
	})
	if err != nil {
		return byHour, byDay, fmt.Errorf("read send times: %w", err)
	}
	return byHour, byDay, nil
}
