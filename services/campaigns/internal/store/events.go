package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
)

// EventChanged is the outbox event type of CampaignChanged: a campaign created, or its status,
// name, audience total or completion changed.
const EventChanged = "campaign.changed"

// announce records the campaign.changed snapshot of org's campaign id as tx sees it, with the
// version the row's trigger gave its last change. Every write that can change one of those
// fields calls it in its own transaction, so the snapshot is published exactly when the
// change commits.
func announce(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) error {
	ev := eventsv1.CampaignChanged{OrganizationId: org.String(), CampaignId: id.String()}
	var created time.Time
	var completed *time.Time
	err := tx.QueryRow(ctx, `SELECT name, status, total_count, created_at, completed_at, version
		FROM campaigns WHERE organization_id = $1 AND id = $2`, org, id).
		Scan(&ev.Name, &ev.Status, &ev.TotalCount, &created, &completed, &ev.Version)
	if err != nil {
		return fmt.Errorf("read campaign %s to announce: %w", id, err)
	}
	ev.CreatedAt = timestamppb.New(created)
	if completed != nil {
		ev.CompletedAt = timestamppb.New(*completed)
	}
	return outbox.Enqueue(ctx, tx, outbox.Event{Type: EventChanged, OrgID: org, Payload: &ev})
}
