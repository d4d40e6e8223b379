package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/proto"
)

// Event is one domain event as its producer records it.
type Event struct {
	// Type names the event, "<entity>.<past-tense verb>", e.g. "contact.deleted".
	Type    string
	OrgID   uuid.UUID
	Payload proto.Message
}

// Execer is what Enqueue writes with: the producer's open transaction (pgx.Tx satisfies it).
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Enqueue records ev in the outbox table of the schema tx works in, under a new UUIDv7 event
// id. Call it inside the transaction that makes the change ev describes: the event is
// published if and only if that transaction commits.
func Enqueue(ctx context.Context, tx Execer, ev Event) error {
	return EnqueueMany(ctx, tx, []Event{ev})
}

// EnqueueMany records events as Enqueue does, in one statement: a batch of changes made in one
// transaction is one round trip, however many events it has.
func EnqueueMany(ctx context.Context, tx Execer, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	ids, types, orgs := make([]uuid.UUID, len(events)), make([]string, len(events)), make([]uuid.UUID, len(events))
	payloads := make([][]byte, len(events))
	for i, ev := range events {
		switch {
		case ev.Type == "":
			return errors.New("outbox: event has no type")
		case ev.OrgID == uuid.Nil:
			return fmt.Errorf("outbox: %s event has no organization", ev.Type)
		case ev.Payload == nil:
			return fmt.Errorf("outbox: %s event has no payload", ev.Type)
		}
		payload, err := proto.Marshal(ev.Payload)
		if err != nil {
			return fmt.Errorf("outbox: marshal %s payload: %w", ev.Type, err)
		}
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("outbox: event id: %w", err)
		}
		ids[i], types[i], orgs[i], payloads[i] = id, ev.Type, ev.OrgID, payload
	}
	if _, err := tx.Exec(ctx, `INSERT INTO outbox (event_id, event_type, organization_id, payload)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::bytea[])`, ids, types, orgs, payloads); err != nil {
		return fmt.Errorf("outbox: insert %d events (%s first): %w", len(events), events[0].Type, err)
	}
	return nil
}
