package server

import (
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// toConversation is a thread with what contacts knows of its phone (nil: no contact).
func toConversation(c store.Conversation, contact *contactsv1.Sendability) *messagingv1.Conversation {
	out := &messagingv1.Conversation{
		PhoneNumber:   c.Phone,
		LastMessage:   c.LastMessage,
		LastMessageAt: timestamppb.New(c.LastMessageAt),
		UnreadCount:   c.UnreadCount,
		IsArchived:    c.IsArchived,
		IsStarred:     c.IsStarred,
	}
	if contact.GetContactId() != "" {
		out.ContactId, out.FirstName, out.LastName = contact.GetContactId(), contact.GetFirstName(), contact.GetLastName()
	}
	return out
}

// toMessage is the spec's Conversation message: analysis fields are set on incoming messages
// only, status on outgoing ones.
func toMessage(m store.Message) *messagingv1.Message {
	out := &messagingv1.Message{
		Id:        m.ID.String(),
		Direction: m.Direction,
		Message:   m.Body,
		// The thread's time, so a thread reads in the order it is listed.
		Timestamp: timestamppb.New(m.ThreadAt),
	}
	if len(m.MediaURLs) > 0 {
		out.MediaUrl = wrapperspb.String(m.MediaURLs[0])
	}
	if m.Direction == store.Outgoing {
		out.Status = wrapperspb.String(apiStatus(m.Status))
		return out
	}
	urls := make([]*structpb.Value, len(m.MediaURLs))
	for i, u := range m.MediaURLs {
		urls[i] = structpb.NewStringValue(u)
	}
	out.MediaUrls = &structpb.ListValue{Values: urls}
	if m.Sentiment != "" {
		out.Sentiment = wrapperspb.String(m.Sentiment)
	}
	out.SentimentScore = &m.SentimentScore
	out.MessageCategory = &m.Category
	out.RequiresResponse = wrapperspb.Bool(m.RequiresResponse)
	out.OptOutDetected = wrapperspb.Bool(m.OptOutDetected)
	return out
}

// apiStatus is an outgoing message's status as the API states it (sent, delivered,
// undelivered, failed): "sending" means the carrier has been handed the message and its
// answer is not recorded yet, which the API calls sent. Queued messages are not shown.
func apiStatus(status string) string {
	if status == store.StatusSending {
		return store.StatusSent
	}
	return status
}
