package intake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/outbox"
	campaignsv1 "github.com/chorus-sms/chorus/proto/gen/go/campaigns/v1"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	pollsv1 "github.com/chorus-sms/chorus/proto/gen/go/polls/v1"
)

// The producers' event types intake reads (as their outboxes name them).
const (
	eventMessageReceived = "message.received"
	eventStatusChanged   = "message.status_changed"
	eventStatusesChanged = "messages.status_changed"
	eventConsentChanged  = "contact.consent_changed"
	eventImportFinished  = "contact.import_finished"
	eventCampaignChanged = "campaign.changed"
	eventPollResponse    = "poll.response_recorded"
	eventPollCompleted   = "poll.completed"
)

// Contacts reads a contact (the contacts client).
type Contacts interface {
	Get(ctx context.Context, org uuid.UUID, id string) (*contactsv1.Contact, error)
}

// Messaging reads a message (the messaging client).
type Messaging interface {
	Message(ctx context.Context, org uuid.UUID, id string) (*messagingv1.Message, error)
}

// Campaigns reads a campaign (the campaigns client).
type Campaigns interface {
	Get(ctx context.Context, org uuid.UUID, id string) (*campaignsv1.Campaign, error)
}

// Polls reads a poll (the polls client).
type Polls interface {
	Get(ctx context.Context, org uuid.UUID, id string) (*pollsv1.Poll, error)
}

// Source is one producer's stream: its name, the types intake reads from it, and its handlers
// (one event, a read's worth).
type Source struct {
	Stream  string
	Types   []string
	Handler outbox.Handler
	Batch   outbox.BatchHandler
}

// Sources are the streams intake consumes.
func (in *Intake) Sources() []Source {
	source := func(stream string, read reader, types ...string) Source {
		return Source{Stream: stream, Types: types, Handler: in.handler(read), Batch: in.batch(read)}
	}
	return []Source{
		source("messaging", in.readMessaging, eventMessageReceived, eventStatusChanged, eventStatusesChanged),
		source("contacts", one(in.readContacts), eventConsentChanged, eventImportFinished),
		source("campaigns", one(in.readCampaigns), eventCampaignChanged),
		source("polls", one(in.readPolls), eventPollResponse, eventPollCompleted),
	}
}

// reportedStatuses are the outgoing statuses message.status reports.
var reportedStatuses = []string{"sent", "delivered", "failed", "undelivered"}

// readMessaging reports inbound messages and outgoing messages' statuses; an event of many
// messages' changes reports each, keyed by the event and the change's place in it.
func (in *Intake) readMessaging(m outbox.Message) ([]Event, error) {
	switch m.Type {
	case eventMessageReceived:
		var ev eventsv1.MessageReceived
		if err := m.Unmarshal(&ev); err != nil {
			return nil, err
		}
		return []Event{{Type: MessageReceived, Key: m.EventID.String(), At: ev.GetReceivedAt().AsTime(),
			Extra: map[string]string{"phoneNumber": ev.GetFrom()},
			Data:  func(context.Context) (proto.Message, error) { return receivedMessage(&ev), nil }}}, nil
	case eventStatusChanged:
		var ev eventsv1.MessageStatusChanged
		if err := m.Unmarshal(&ev); err != nil {
			return nil, err
		}
		return in.statusEvent(nil, m.OrgID, m.EventID.String(), &ev), nil
	case eventStatusesChanged:
		var ev eventsv1.MessagesStatusChanged
		if err := m.Unmarshal(&ev); err != nil {
			return nil, err
		}
		var out []Event
		for i, c := range ev.GetChanges() {
			out = in.statusEvent(out, m.OrgID, fmt.Sprintf("%s/%d", m.EventID, i), c)
		}
		return out, nil
	}
	return nil, nil
}

// statusEvent appends the message.status event of ev, keyed key, to out. A message withdrawn
// before the carrier saw it was never sent: the API shows it nowhere, so it is reported
// nowhere.
func (in *Intake) statusEvent(out []Event, org uuid.UUID, key string, ev *eventsv1.MessageStatusChanged) []Event {
	if !slices.Contains(reportedStatuses, ev.GetStatus()) || apierr.Withdrawn(ev.GetErrorCode()) {
		return out
	}
	return append(out, Event{Type: MessageStatus, Key: key, At: ev.GetOccurredAt().AsTime(),
		Extra: map[string]string{"phoneNumber": ev.GetTo()},
		Data:  func(ctx context.Context) (proto.Message, error) { return in.statusMessage(ctx, org, ev) }})
}

// receivedMessage is an inbound message as the thread shows it.
func receivedMessage(ev *eventsv1.MessageReceived) *messagingv1.Message {
	msg := &messagingv1.Message{
		Id: ev.GetMessageId(), Direction: "incoming", Message: ev.GetBody(),
		Sentiment:        wrapperspb.String(ev.GetSentiment()),
		SentimentScore:   proto.Float64(ev.GetSentimentScore()),
		MessageCategory:  proto.String(ev.GetCategory()),
		RequiresResponse: wrapperspb.Bool(ev.GetRequiresResponse()),
		OptOutDetected:   wrapperspb.Bool(ev.GetOptOutDetected()),
		Timestamp:        stored(ev.GetReceivedAt()),
		MediaUrls:        &structpb.ListValue{},
	}
	for _, u := range ev.GetMediaUrls() {
		msg.MediaUrls.Values = append(msg.MediaUrls.Values, structpb.NewStringValue(u))
	}
	if len(ev.GetMediaUrls()) > 0 {
		msg.MediaUrl = wrapperspb.String(ev.GetMediaUrls()[0])
	}
	return msg
}

// statusMessage is the reported message as its thread shows it, with the status reported (the
// thread may show a later one by now).
func (in *Intake) statusMessage(ctx context.Context, org uuid.UUID, ev *eventsv1.MessageStatusChanged) (proto.Message, error) {
	msg, err := in.peers.Messaging.Message(ctx, org, ev.GetMessageId())
	if err != nil {
		return nil, err
	}
	msg.Status = wrapperspb.String(ev.GetStatus())
	return msg, nil
}

func (in *Intake) readContacts(m outbox.Message) (Event, error) {
	switch m.Type {
	case eventConsentChanged:
		return in.readConsent(m)
	case eventImportFinished:
		return readImportFinished(m)
	}
	return Event{}, nil
}

// readImportFinished reports an import's end (completed or failed) once, with the import as
// GET /api/contacts/imports/{id} showed it when it ended (the event carries it whole).
func readImportFinished(m outbox.Message) (Event, error) {
	var ev eventsv1.ContactImportFinished
	if err := m.Unmarshal(&ev); err != nil {
		return Event{}, err
	}
	return Event{Type: ImportCompleted, Key: "import:" + ev.GetImportId(), At: ev.GetCompletedAt().AsTime(),
		Data: func(context.Context) (proto.Message, error) {
			return &contactsv1.ContactImport{Id: ev.GetImportId(), Status: ev.GetStatus(), Total: ev.GetTotal(),
				Processed: ev.GetProcessed(), Created: ev.GetCreated(), Merged: ev.GetMerged(), Rejected: ev.GetRejected(),
				LookupsPending: ev.GetLookupsPending(), CreatedAt: stored(ev.GetCreatedAt()), CompletedAt: stored(ev.GetCompletedAt())}, nil
		}}, nil
}

// readConsent reports an opt-out or opt-in with the contact as GET /api/contacts/{id} shows it
// when the event is fanned out.
func (in *Intake) readConsent(m outbox.Message) (Event, error) {
	var ev eventsv1.ContactConsentChanged
	if err := m.Unmarshal(&ev); err != nil {
		return Event{}, err
	}
	typ := ContactOptedOut
	if ev.GetIsOptedIn() {
		typ = ContactOptedIn
	}
	org := m.OrgID
	return Event{Type: typ, Key: m.EventID.String(), At: ev.GetOccurredAt().AsTime(), Data: func(ctx context.Context) (proto.Message, error) {
		c, err := in.peers.Contacts.Get(ctx, org, ev.GetContactId())
		if errors.Is(err, clients.ErrNotFound) { // deleted since: what the event tells
			c = &contactsv1.Contact{Id: ev.GetContactId(), OrganizationId: ev.GetOrganizationId(), Phone: ev.GetPhone(), IsOptedIn: ev.GetIsOptedIn()}
			if !ev.GetIsOptedIn() {
				c.OptedOutAt = stored(ev.GetOccurredAt())
			}
			return c, nil
		}
		return c, err
	}}, nil
}

// readCampaigns reports a campaign's completion once (keyed by the campaign, whatever the
// number of its completed snapshots), with the campaign as GET /api/campaigns/{id} shows it
// when the event is fanned out.
func (in *Intake) readCampaigns(m outbox.Message) (Event, error) {
	if m.Type != eventCampaignChanged {
		return Event{}, nil
	}
	var ev eventsv1.CampaignChanged
	if err := m.Unmarshal(&ev); err != nil {
		return Event{}, err
	}
	if ev.GetStatus() != "completed" {
		return Event{}, nil
	}
	org := m.OrgID
	return Event{Type: CampaignCompleted, Key: "campaign:" + ev.GetCampaignId(), At: ev.GetCompletedAt().AsTime(),
		Data: func(ctx context.Context) (proto.Message, error) {
			return in.peers.Campaigns.Get(ctx, org, ev.GetCampaignId())
		}}, nil
}

// readPolls reports each stored answer, as the participant list shows it, with the poll,
// participant and contact it belongs to beside it, and each poll's completion once, with the
// poll as GET /api/polls/{id} shows it.
func (in *Intake) readPolls(m outbox.Message) (Event, error) {
	switch m.Type {
	case eventPollResponse:
		var ev eventsv1.PollResponseRecorded
		if err := m.Unmarshal(&ev); err != nil {
			return Event{}, err
		}
		return Event{Type: PollResponse, Key: m.EventID.String(), At: ev.GetReceivedAt().AsTime(),
			Extra: map[string]string{"pollId": ev.GetPollId(), "participantId": ev.GetParticipantId(), "contactId": ev.GetContactId(), "phoneNumber": ev.GetPhone()},
			Data: func(context.Context) (proto.Message, error) {
				return &pollsv1.Response{QuestionNumber: ev.GetQuestionNumber(), ResponseCode: ev.GetResponseCode(), Answer: ev.GetAnswer(),
					OptionCode: ev.GetOptionCode(), ReceivedAt: stored(ev.GetReceivedAt())}, nil
			}}, nil
	case eventPollCompleted:
		var ev eventsv1.PollCompleted
		if err := m.Unmarshal(&ev); err != nil {
			return Event{}, err
		}
		org := m.OrgID
		return Event{Type: PollCompleted, Key: "poll:" + ev.GetPollId(), At: ev.GetCompletedAt().AsTime(),
			Data: func(ctx context.Context) (proto.Message, error) { return in.peers.Polls.Get(ctx, org, ev.GetPollId()) }}, nil
	}
	return Event{}, nil
}

// stored is t as the API shows it: PostgreSQL keeps microseconds, events carry the producer's
// clock to the nanosecond.
func stored(t *timestamppb.Timestamp) *timestamppb.Timestamp {
	return timestamppb.New(t.AsTime().Truncate(time.Microsecond))
}
