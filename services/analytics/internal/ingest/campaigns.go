package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
)

// campaign keeps ev's snapshot unless a later one (a higher version) is already kept; the
// day it was created is read in the organization's zone.
func (in *Ingester) campaign(ctx context.Context, tx pgx.Tx, org uuid.UUID, ev *eventsv1.CampaignChanged) error {
	id, err := uuid.Parse(ev.GetCampaignId())
	if err != nil {
		return nil
	}
	created := ev.GetCreatedAt().AsTime()
	day, _, err := in.local(ctx, org, created)
	if err != nil {
		return err
	}
	var completed *time.Time
	if ev.GetCompletedAt() != nil {
		t := ev.GetCompletedAt().AsTime()
		completed = &t
	}
	_, err = tx.Exec(ctx, `INSERT INTO campaigns AS c (organization_id, id, version, name, status, total_count, created_at, created_day, completed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (organization_id, id) DO UPDATE SET version = excluded.version, name = excluded.name,
			status = excluded.status, total_count = excluded.total_count, created_at = excluded.created_at,
			created_day = excluded.created_day, completed_at = excluded.completed_at
		WHERE c.version < excluded.version`,
		org, id, ev.GetVersion(), ev.GetName(), ev.GetStatus(), ev.GetTotalCount(), created, day, completed)
	if err != nil {
		return fmt.Errorf("store campaign %s: %w", id, err)
	}
	return nil
}
