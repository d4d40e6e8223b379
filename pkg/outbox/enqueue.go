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
	if _, err := tx.Exec(ctx,
		`INSERT INTO outbox (event_id, event_type, organization_id, payload) VALUES ($1, $2, $3, $4)`,
		id, ev.Type, ev.OrgID, payload); err != nil {
		return fmt.Errorf("outbox: insert %s event: %w", ev.Type, err)
	}
	return nil
}
