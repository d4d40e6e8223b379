package outbox

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
)

// StreamName is the Redis Stream a service publishes its events on: chorus.<service>.events.
func StreamName(service string) string { return "chorus." + service + ".events" }

// DeadLetterStream is where consumers of stream move entries they gave up on. Each dead entry
// keeps the original fields and adds source_id, group, consumer, deliveries and error, so it
// can be inspected and re-added to stream once the cause is fixed.
func DeadLetterStream(stream string) string { return stream + ".dead" }

// Field names of a stream entry.
const (
	fieldEventID = "event_id"
	fieldType    = "type"
	fieldOrg     = "org"
	fieldPayload = "payload"
)

// Message is one event as a consumer receives it.
type Message struct {
	EventID uuid.UUID
	Type    string
	OrgID   uuid.UUID
	// Payload is the protobuf encoding of the producer's Event.Payload.
	Payload []byte
}

// Unmarshal decodes the payload into dst, the message type the event's Type implies.
func (m Message) Unmarshal(dst proto.Message) error {
	if err := proto.Unmarshal(m.Payload, dst); err != nil {
		return fmt.Errorf("outbox: unmarshal %s payload into %T: %w", m.Type, dst, err)
	}
	return nil
}

// entryValues are the stream fields of m, in a fixed order.
func (m Message) entryValues() []any {
	return []any{
		fieldEventID, m.EventID.String(),
		fieldType, m.Type,
		fieldOrg, m.OrgID.String(),
		fieldPayload, m.Payload,
	}
}

// parseEntry reads a stream entry's fields back into a Message.
func parseEntry(values map[string]any) (Message, error) {
	str := func(field string) (string, error) {
		s, ok := values[field].(string)
		if !ok {
			return "", fmt.Errorf("field %s missing", field)
		}
		return s, nil
	}
	var m Message
	id, err := str(fieldEventID)
	if err == nil {
		m.EventID, err = uuid.Parse(id)
	}
	if err != nil {
		return Message{}, fmt.Errorf("event id: %w", err)
	}
	if m.Type, err = str(fieldType); err == nil && m.Type == "" {
		err = errors.New("field type empty")
	}
	if err != nil {
		return Message{}, err
	}
	org, err := str(fieldOrg)
	if err == nil {
		m.OrgID, err = uuid.Parse(org)
	}
	if err != nil {
		return Message{}, fmt.Errorf("organization: %w", err)
	}
	payload, err := str(fieldPayload)
	if err != nil {
		return Message{}, err
	}
	m.Payload = []byte(payload)
	return m, nil
}
