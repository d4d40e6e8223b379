package dispatch

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// EventStatusChanged is the outbox event type of MessageStatusChanged.
const EventStatusChanged = "message.status_changed"

// publishStatus writes the status change of m to the outbox inside tx.
func publishStatus(ctx context.Context, tx pgx.Tx, m store.Message, s carrier.Status) error {
	return outbox.Enqueue(ctx, tx, statusEvent(m, s))
}

// statusEvent is the event of m's status change to s.
func statusEvent(m store.Message, s carrier.Status) outbox.Event {
	credits := int32(0)
	if m.Billable && s.Status != carrier.StatusFailed {
		credits = m.Credits
	}
	return outbox.Event{
		Type:  EventStatusChanged,
		OrgID: m.OrgID,
		Payload: &eventsv1.MessageStatusChanged{
			OrganizationId: m.OrgID.String(),
			MessageId:      m.ID.String(),
			To:             m.ContactPhone,
			Status:         s.Status,
			SourceKind:     m.SourceKind,
			SourceId:       m.SourceID,
			Credits:        credits,
			OccurredAt:     timestamppb.New(time.Now()),
			ErrorCode:      s.ErrorCode,
			DedupeKey:      m.DedupeKey,
		},
	}
}
