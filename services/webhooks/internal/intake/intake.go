// Package intake turns the producers' events into deliveries: for each event type an
// organization's enabled endpoints subscribe to, the payload is built once (the resource's
// REST representation in an envelope) and one delivery per endpoint is stored, with its first
// attempt queued, in the consumer's transaction that records the event as processed. A
// redelivered event finds its deliveries stored (keyed by endpoint and event) and adds none.
package intake

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/services/webhooks/internal/store"
)

// The event types endpoints subscribe to.
const (
	MessageReceived   = "message.received"
	MessageStatus     = "message.status"
	ContactOptedOut   = "contact.opted_out"
	ContactOptedIn    = "contact.opted_in"
	CampaignCompleted = "campaign.completed"
	PollResponse      = "poll.response"
	PollCompleted     = "poll.completed"
	ImportCompleted   = "import.completed"
)

// Types are the event types an endpoint may subscribe to.
var Types = []string{MessageReceived, MessageStatus, ContactOptedOut, ContactOptedIn, CampaignCompleted, PollResponse, PollCompleted, ImportCompleted}

// Queuer queues the first attempt of deliveries (deliver.Runner).
type Queuer interface {
	Queue(ctx context.Context, tx pgx.Tx, org uuid.UUID, ids []uuid.UUID) error
}

// Event is what a producer's event becomes: its type for endpoints, the key that makes it
// once per endpoint, when it happened, and how to build its data, called only when some
// endpoint subscribes.
type Event struct {
	Type string
	Key  string
	At   time.Time
	Data func(ctx context.Context) (proto.Message, error)
	// Extra are envelope fields besides type, timestamp and data (the conversation's phone).
	Extra map[string]string
}

// Intake stores deliveries for events.
type Intake struct {
	queue Queuer
	peers Peers
}

// Peers are the services whose resources the events show.
type Peers struct {
	Contacts  Contacts
	Messaging Messaging
	Campaigns Campaigns
	Polls     Polls
}

// New returns an Intake queuing with q, reading the events' resources from peers.
func New(q Queuer, peers Peers) *Intake { return &Intake{queue: q, peers: peers} }

// rest is the REST API's JSON: every field present, lowerCamelCase.
var rest = protojson.MarshalOptions{EmitUnpopulated: true}

// payload is ev's body.
func payload(ctx context.Context, ev Event) ([]byte, error) {
	data, err := ev.Data(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := rest.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("marshal %s data: %w", ev.Type, err)
	}
	body := map[string]any{"type": ev.Type, "timestamp": ev.At.UTC().Format(time.RFC3339Nano), "data": json.RawMessage(raw)}
	for k, v := range ev.Extra {
		body[k] = v
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", ev.Type, err)
	}
	return b, nil
}

// handle stores ev's deliveries for org's subscribed endpoints and queues them.
func (in *Intake) handle(ctx context.Context, tx pgx.Tx, org uuid.UUID, ev Event) error {
	if ev.Type == "" {
		return nil // an event no endpoint can subscribe to
	}
	endpoints, err := store.Subscribed(ctx, tx, org, ev.Type)
	if err != nil || len(endpoints) == 0 {
		return err
	}
	body, err := payload(ctx, ev)
	if err != nil {
		return err
	}
	ds := make([]store.NewDelivery, len(endpoints))
	for i, e := range endpoints {
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("delivery id: %w", err)
		}
		ds[i] = store.NewDelivery{ID: id, Endpoint: e}
	}
	ids, err := store.InsertDeliveries(ctx, tx, org, ev.Key, ev.Type, body, ds)
	if err != nil || len(ids) == 0 {
		return err
	}
	return in.queue.Queue(ctx, tx, org, ids)
}

// batch applies a read's worth of events in one call (outbox.WithBatchHandler): one query
// finds which of their organizations have endpoints at all, and only those organizations'
// events are read and fanned out, so the streams' busy organizations without webhooks cost
// one statement a read.
func (in *Intake) batch(read reader) outbox.BatchHandler {
	return func(ctx context.Context, tx pgx.Tx, ms []outbox.Message) error {
		orgs := make([]uuid.UUID, len(ms))
		for i, m := range ms {
			orgs[i] = m.OrgID
		}
		with, err := store.OrgsWithEndpoints(ctx, tx, orgs)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if !with[m.OrgID] {
				continue
			}
			if err := in.handleAll(ctx, tx, m, read); err != nil {
				return err
			}
		}
		return nil
	}
}

// handler is an outbox handler that reads each event with read.
func (in *Intake) handler(read reader) outbox.Handler {
	return func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		return in.handleAll(ctx, tx, m, read)
	}
}

// reader turns a producer's event into what it tells endpoints: none, one, or (an event of
// many messages' changes) several.
type reader func(m outbox.Message) ([]Event, error)

// one is a reader of producers' events that tell endpoints at most one thing.
func one(read func(m outbox.Message) (Event, error)) reader {
	return func(m outbox.Message) ([]Event, error) {
		ev, err := read(m)
		return []Event{ev}, err
	}
}

// handleAll stores the deliveries of what m tells endpoints, read with read.
func (in *Intake) handleAll(ctx context.Context, tx pgx.Tx, m outbox.Message, read reader) error {
	evs, err := read(m)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if err := in.handle(ctx, tx, m.OrgID, ev); err != nil {
			return err
		}
	}
	return nil
}
