// Package inbound processes the messages carriers deliver to our numbers: it stores each once,
// applies opt-out, opt-in and help keywords (consent is recorded in contacts before anything
// else can be sent to the number), classifies the text, attributes it to the latest outgoing
// message, and publishes it as an event for polls, campaigns and analytics.
package inbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/phone"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/classify"
	"github.com/chorus-sms/chorus/services/messaging/internal/dispatch"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// EventMessageReceived is the outbox event type of MessageReceived.
const EventMessageReceived = "message.received"

// Processor handles inbound messages.
type Processor struct {
	store    *store.Store
	orgs     *orgs.Client
	contacts *contacts.Client
	dispatch *dispatch.Dispatcher
	log      *slog.Logger
}

// New returns a processor.
func New(st *store.Store, o *orgs.Client, c *contacts.Client, d *dispatch.Dispatcher, log *slog.Logger) *Processor {
	return &Processor{store: st, orgs: o, contacts: c, dispatch: d, log: log}
}

// Receive stores and acts on one inbound message of a carrier. A message the carrier delivers
// again (same carrier message id) changes nothing. Messages from one number are processed one
// at a time, in arrival order, so a STOP followed by START ends opted in.
func (p *Processor) Receive(ctx context.Context, provider string, in carrier.Inbound) error {
	to, err := phone.Normalize(in.To)
	if err != nil {
		return apierr.Field("To", "must be a phone number")
	}
	num, err := p.store.NumberByE164(ctx, to)
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("no organization has the number " + to)
	}
	if err != nil {
		return err
	}
	// A sender that is not a valid number (a short code, an alphanumeric id) is stored as sent
	// and has no contact to act on.
	from, fromErr := phone.Normalize(in.From)
	if fromErr != nil {
		from = in.From
	}
	org, err := p.orgs.Organization(ctx, num.OrgID)
	if err != nil {
		return err
	}
	res := classify.Classify(in.Body)
	now := time.Now()
	m := store.Message{
		ID:                uuid.Must(uuid.NewV7()),
		OrgID:             num.OrgID,
		Direction:         store.Incoming,
		ContactPhone:      from,
		OurNumber:         num.Number,
		PhoneNumberID:     &num.ID,
		Body:              in.Body,
		MediaURLs:         in.MediaURLs,
		IsMMS:             len(in.MediaURLs) > 0,
		Provider:          provider,
		ProviderMessageID: in.ProviderMessageID,
		SourceKind:        store.SourceInbound,
		Sentiment:         res.Sentiment,
		SentimentScore:    res.Score,
		Category:          res.Category,
		RequiresResponse:  res.RequiresResponse,
		OptOutDetected:    res.Keyword == classify.KeywordOptOut,
		Keyword:           res.Word,
		CreatedAt:         now,
	}
	return p.store.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('messaging.inbound:' || $1::text || ':' || $2, 0))`, num.OrgID, from); err != nil {
			return fmt.Errorf("lock sender: %w", err)
		}
		var seen bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM messages WHERE provider = $1 AND provider_message_id = $2)`, provider, in.ProviderMessageID).Scan(&seen); err != nil {
			return fmt.Errorf("check duplicate: %w", err)
		}
		if seen {
			return nil
		}
		var contactID string
		var reply string
		if fromErr == nil {
			contactID, reply, err = p.applyToContact(ctx, num.OrgID, org, from, res, now)
			if err != nil {
				return err
			}
		}
		last, err := p.store.LatestOutgoing(ctx, tx, num.OrgID, from)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil {
			m.AttributedTo = &last.ID
		}
		if _, err := p.store.InsertIncoming(ctx, tx, &m); err != nil {
			return err
		}
		if err := publishReceived(ctx, tx, m, contactID, last); err != nil {
			return err
		}
		if reply == "" {
			return nil
		}
		return p.queueReply(ctx, tx, org, num, from, reply, now)
	})
}

// applyToContact records consent keywords and the sender's textability in contacts, and
// returns the sender's contact id and the automatic answer to send, if any.
func (p *Processor) applyToContact(ctx context.Context, org uuid.UUID, o *orgsv1.Organization, from string, res classify.Result, now time.Time) (contactID, reply string, err error) {
	switch res.Keyword {
	case classify.KeywordOptOut, classify.KeywordOptIn:
		optIn := res.Keyword == classify.KeywordOptIn
		c, err := p.contacts.SetConsent(ctx, org, &contactsv1.SetConsentRequest{
			Phone: from, OptedIn: optIn, OccurredAt: timestamppb.New(now), Source: "keyword:" + res.Word,
		})
		if err != nil {
			return "", "", fmt.Errorf("record consent: %w", err)
		}
		if c.GetChanged() {
			reply = optOutReply(o)
			if optIn {
				reply = optInReply(o)
			}
		}
	case classify.KeywordHelp:
		reply = helpReply(o)
	}
	rec, err := p.contacts.RecordInbound(ctx, org, from)
	if err != nil {
		return "", "", fmt.Errorf("record inbound: %w", err)
	}
	return rec.GetContactId(), reply, nil
}

// queueReply queues a keyword's answer from the number the message came to. It costs no
// credits and skips the consent check: an opt-out's confirmation is the one message the law
// lets us send after it.
func (p *Processor) queueReply(ctx context.Context, tx pgx.Tx, o *orgsv1.Organization, num store.Number, to, body string, now time.Time) error {
	m := store.Message{
		ID:            uuid.Must(uuid.NewV7()),
		OrgID:         num.OrgID,
		Direction:     store.Outgoing,
		ContactPhone:  to,
		OurNumber:     num.Number,
		PhoneNumberID: &num.ID,
		Body:          body,
		Status:        store.StatusQueued,
		Provider:      p.dispatch.ProviderFor(o.GetSandbox()).Name(),
		SourceKind:    store.SourceSystem,
		CreatedAt:     now.Add(time.Microsecond), // after the message it answers
	}
	if _, err := p.store.InsertOutgoing(ctx, tx, &m); err != nil {
		return err
	}
	return p.dispatch.QueueTx(ctx, tx, num.OrgID, m.ID)
}

func publishReceived(ctx context.Context, tx pgx.Tx, m store.Message, contactID string, last store.Message) error {
	ev := &eventsv1.MessageReceived{
		OrganizationId: m.OrgID.String(),
		MessageId:      m.ID.String(),
		From:           m.ContactPhone,
		To:             m.OurNumber,
		ContactId:      contactID,
		Body:           m.Body,
		MediaUrls:      m.MediaURLs,
		ReceivedAt:     timestamppb.New(m.CreatedAt),
		Category:       m.Category,
		Sentiment:      m.Sentiment,
		SentimentScore: m.SentimentScore,
		OptOutDetected: m.OptOutDetected,
	}
	if m.AttributedTo != nil {
		ev.Attribution = &eventsv1.Attribution{MessageId: last.ID.String(), SourceKind: last.SourceKind, SourceId: last.SourceID}
	}
	return outbox.Enqueue(ctx, tx, outbox.Event{Type: EventMessageReceived, OrgID: m.OrgID, Payload: ev})
}

// ContactDeletedHandler drops a deleted contact's thread: messages, short links and the
// conversation, up to the deletion time (later messages from the number start a new thread).
func ContactDeletedHandler(st *store.Store) outbox.Handler {
	return func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		if m.Type != "contact.deleted" {
			return nil
		}
		var ev eventsv1.ContactDeleted
		if err := m.Unmarshal(&ev); err != nil {
			return err
		}
		if ev.GetPhone() == "" {
			return nil
		}
		return st.DeleteThread(ctx, tx, m.OrgID, ev.GetPhone(), ev.GetDeletedAt().AsTime())
	}
}
