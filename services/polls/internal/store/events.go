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

// The outbox events polls publishes on chorus.polls.events (outbound webhooks follow them).
const (
	EventResponseRecorded = "poll.response_recorded"
	EventCompleted        = "poll.completed"
)

// publishResponse records p's answer r as an event, in the transaction that stores it.
func publishResponse(ctx context.Context, tx pgx.Tx, p *Participant, r Response) error {
	ev := &eventsv1.PollResponseRecorded{
		OrganizationId: p.OrgID.String(), PollId: p.PollID.String(), ParticipantId: p.ID.String(),
		ContactId: p.ContactID.String(), Phone: p.Phone, QuestionNumber: r.QuestionNumber,
		ResponseCode: r.ResponseCode, Answer: r.Answer, OptionCode: r.OptionCode, ReceivedAt: timestamppb.New(r.ReceivedAt),
	}
	if err := outbox.Enqueue(ctx, tx, outbox.Event{Type: EventResponseRecorded, OrgID: p.OrgID, Payload: ev}); err != nil {
		return fmt.Errorf("enqueue %s: %w", EventResponseRecorded, err)
	}
	return nil
}

// PublishCompleted records that org's poll completed at, in the transaction that completed it.
func PublishCompleted(ctx context.Context, tx pgx.Tx, org, poll uuid.UUID, at time.Time) error {
	ev := &eventsv1.PollCompleted{OrganizationId: org.String(), PollId: poll.String(), CompletedAt: timestamppb.New(at)}
	if err := outbox.Enqueue(ctx, tx, outbox.Event{Type: EventCompleted, OrgID: org, Payload: ev}); err != nil {
		return fmt.Errorf("enqueue %s: %w", EventCompleted, err)
	}
	return nil
}
