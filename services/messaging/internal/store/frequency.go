package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// CapProbe asks whether a campaign message was handed to the carrier for Phone of Org at or
// after Since, other than Except (the message being dispatched).
type CapProbe struct {
	Org    uuid.UUID
	Phone  string
	Since  time.Time
	Except uuid.UUID
}

// CampaignSentSince answers each probe in order, in one statement: one probe of the index
// messages_campaign_dispatched per probe (LIMIT 1 under EXISTS), so the answer never depends
// on the planner's idea of how many messages a phone has. A message counts from its claim
// ("sending") until it failed: one that failed never reached the recipient.
func (s *Store) CampaignSentSince(ctx context.Context, probes []CapProbe) ([]bool, error) {
	orgs, phones := make([]uuid.UUID, len(probes)), make([]string, len(probes))
	since, except := make([]time.Time, len(probes)), make([]uuid.UUID, len(probes))
	for i, p := range probes {
		orgs[i], phones[i], since[i], except[i] = p.Org, p.Phone, p.Since, p.Except
	}
	rows, err := s.pool.Query(ctx, `
		SELECT EXISTS (SELECT 1 FROM messages m
			WHERE m.organization_id = p.org AND m.contact_phone = p.phone
				AND m.source_kind = 'campaign' AND m.dispatched_at IS NOT NULL AND m.dispatched_at >= p.since
				AND m.id <> p.own AND m.status IN ('sending', 'sent', 'delivered', 'undelivered'))
		FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::uuid[]) WITH ORDINALITY AS p(org, phone, since, own, ord)
		ORDER BY p.ord`, orgs, phones, since, except)
	if err != nil {
		return nil, fmt.Errorf("frequency cap probe: %w", err)
	}
	defer rows.Close()
	out := make([]bool, 0, len(probes))
	for rows.Next() {
		var sent bool
		if err := rows.Scan(&sent); err != nil {
			return nil, fmt.Errorf("frequency cap probe: %w", err)
		}
		out = append(out, sent)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("frequency cap probe: %w", err)
	}
	return out, nil
}
