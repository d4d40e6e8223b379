package dispatch

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// The outbox event types of MessageStatusChanged and MessagesStatusChanged.
const (
	EventStatusChanged   = "message.status_changed"
	EventStatusesChanged = "messages.status_changed"
)

// changesPerEvent bounds the changes one MessagesStatusChanged event carries, and so the size
// of its outbox row and stream entry.
const changesPerEvent = 250

// statusChange is one message's move to a status, as one statement of a batch made it.
type statusChange struct {
	m store.Message
	s carrier.Status
}

// statusEvents are the events of changes made together: a poll message's as an event of its
// own, the others' as MessagesStatusChanged events of up to changesPerEvent changes of one
// organization.
func statusEvents(changes []statusChange) []outbox.Event {
	var events []outbox.Event
	batches := map[uuid.UUID]*eventsv1.MessagesStatusChanged{}
	for _, c := range changes {
		if c.m.SourceKind == store.SourcePoll {
			events = append(events, statusEvent(c.m, c.s))
			continue
		}
		ev := batches[c.m.OrgID]
		if ev == nil || len(ev.Changes) == changesPerEvent {
			ev = &eventsv1.MessagesStatusChanged{OrganizationId: c.m.OrgID.String()}
			batches[c.m.OrgID] = ev
			events = append(events, outbox.Event{Type: EventStatusesChanged, OrgID: c.m.OrgID, Payload: ev})
		}
		ev.Changes = append(ev.Changes, statusPayload(c.m, c.s))
	}
	return events
}

// publishStatus writes the status change of m to the outbox inside tx.
func publishStatus(ctx context.Context, tx pgx.Tx, m store.Message, s carrier.Status) error {
	return outbox.Enqueue(ctx, tx, statusEvent(m, s))
}

// statusEvent is the event of m's status change to s.
func statusEvent(m store.Message, s carrier.Status) outbox.Event {
	return outbox.Event{Type: EventStatusChanged, OrgID: m.OrgID, Payload: statusPayload(m, s)}
}

// statusPayload tells of m's status change to s.
func statusPayload(m store.Message, s carrier.Status) *eventsv1.MessageStatusChanged {
	credits := int32(0)
	if m.Billable && s.Status != carrier.StatusFailed {
		credits = m.Credits
	}
	return &eventsv1.MessageStatusChanged{
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
	}
}
