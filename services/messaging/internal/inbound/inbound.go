// Package inbound processes the messages carriers deliver to our numbers: it stores each once,
// applies opt-out, opt-in and help keywords, opt-outs in words of their own and the
// organization's sign-up keywords (consent is recorded in contacts before anything else can be
// sent to the number), classifies the text, attributes it to the latest outgoing message, and
// publishes it as an event for polls, campaigns and analytics.
package inbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/route"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/classify"
	"github.com/chorus-sms/chorus/services/messaging/internal/dispatch"
	"github.com/chorus-sms/chorus/services/messaging/internal/signup"
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
	locks    senderLocks
	log      *slog.Logger
}

// New returns a processor; rdb holds the locks that keep one sender's messages in order.
func New(st *store.Store, o *orgs.Client, c *contacts.Client, d *dispatch.Dispatcher, rdb *redis.Client, log *slog.Logger) *Processor {
	return &Processor{store: st, orgs: o, contacts: c, dispatch: d, locks: senderLocks{rdb: rdb, ttl: time.Minute, wait: 20 * time.Second}, log: log}
}

// Receive stores and acts on one inbound message of a carrier. A message the carrier delivers
// again (same carrier message id to the same organization) changes nothing. Messages from one
// number are processed one at a time, in arrival order, so a STOP followed by START ends opted
// in. A carrier speaks only for the numbers of organizations whose messages it carries:
// another carrier's webhook naming such a number is answered as for an unknown number.
func (p *Processor) Receive(ctx context.Context, provider string, in carrier.Inbound) (err error) {
	to, err := phone.Normalize(in.To)
	if err != nil {
		return apierr.Field("To", "must be a phone number")
	}
	num, err := p.store.NumberByE164(ctx, to)
	if errors.Is(err, store.ErrNotFound) {
		return unknownNumber(to)
	}
	if err != nil {
		return err
	}
	org, err := p.orgs.Organization(ctx, num.OrgID)
	if err != nil {
		return err
	}
	if p.dispatch.ProviderFor(org.GetSandbox()).Name() != provider {
		return unknownNumber(to)
	}
	// A short code is stored as sent and has no contact to act on.
	from, fromErr := phone.Normalize(in.From)
	if fromErr != nil {
		from = in.From
	}
	res := classify.Classify(in.Body)
	// A STOP holds back every send to its phone from the moment it arrives, before it waits
	// for the sender's lock and before contacts records it (dispatch/stops.go). Its mark goes
	// once it is handled; a STOP that failed keeps it until it expires or the carrier retries.
	// An opt-out in words ("please stop texting me") is a STOP here and below.
	if res.OptsOut() && fromErr == nil {
		clearMark, err := p.dispatch.MarkStop(ctx, num.OrgID, from)
		if err != nil {
			return err
		}
		defer func() {
			if err == nil {
				clearMark()
			}
		}()
	}
	unlock, err := p.locks.lock(ctx, num.OrgID, from)
	if err != nil {
		return err
	}
	defer unlock()
	seen, err := p.store.IncomingSeen(ctx, num.OrgID, provider, in.ProviderMessageID)
	if err != nil || seen {
		return err
	}
	// A sign-up keyword is looked for in a message from a phone that is no compliance keyword
	// and no opt-out: those win, and a reserved word is never a sign-up keyword anyway.
	var kw *store.Keyword
	if fromErr == nil && res.Keyword == classify.KeywordNone && !res.OptsOut() {
		if kw, err = p.signupKeyword(ctx, num.OrgID, in.Body); err != nil {
			return err
		}
	}
	// Stamped under the lock, so the number's messages are in the order they are processed.
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
		OptOutDetected:    res.OptOutDetected,
		Keyword:           res.Word,
		CreatedAt:         now,
	}
	if kw != nil {
		// A sign-up is an opt-in: consumers (auto-replies, polls) read it as one, not as words.
		m.Category, m.RequiresResponse, m.Keyword = classify.CategoryOptIn, false, kw.Word
	}
	// Contacts is called before messaging's transaction opens: no connection waits on it.
	var contactID string
	var consent consentResult
	if fromErr == nil {
		if kw != nil {
			if err := p.signUp(ctx, *kw, m); err != nil {
				return err
			}
		}
		if contactID, consent, err = p.applyToContact(ctx, m, res); err != nil {
			return err
		}
		// A STOP is answered (and the carrier told it was received) only once nothing that
		// passed its consent check before the opt-out can still reach the carrier.
		if res.OptsOut() {
			if err := p.dispatch.AwaitHandOffs(ctx, num.OrgID, from); err != nil {
				return err
			}
		}
	}
	return p.store.InTx(ctx, func(tx pgx.Tx) error {
		var reply string
		switch {
		case fromErr != nil: // a short code gets no answer
		case kw != nil: // every sign-up message is confirmed, once, as it is stored once
			reply = signup.Confirmation(org.GetName(), kw.Confirmation, kw.Frequency)
		default:
			if reply, err = p.answer(ctx, tx, org, m, res, consent); err != nil {
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
		inserted, err := p.store.InsertIncoming(ctx, tx, &m)
		if err != nil || !inserted {
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

// unknownNumber answers a webhook for a number no organization reachable by its carrier has.
func unknownNumber(to string) error {
	return apierr.NotFound("no organization has the number " + to)
}

// consentResult is what a consent keyword did in contacts.
type consentResult struct {
	found   bool // a contact has the phone (an opt-in of an unknown phone creates none)
	changed bool // the contact's consent flipped
}

// applyToContact records opt-outs and opt-ins of the sender of m and its textability in
// contacts, and returns the sender's contact id and what the consent change did. The source
// tells a keyword ("keyword:STOP") from words ("text:stop-messaging") in contacts' consent
// history, which keeps the message's id and text as evidence.
func (p *Processor) applyToContact(ctx context.Context, m store.Message, res classify.Result) (contactID string, consent consentResult, err error) {
	org, from := m.OrgID, m.ContactPhone
	if res.OptsOut() || res.Keyword == classify.KeywordOptIn {
		c, err := p.contacts.SetConsent(ctx, org, &contactsv1.SetConsentRequest{
			Phone: from, OptedIn: res.Keyword == classify.KeywordOptIn, OccurredAt: timestamppb.New(m.CreatedAt),
			Source: res.ConsentSource(), MessageId: m.ID.String(), MessageText: m.Body,
		})
		if err != nil {
			return "", consentResult{}, fmt.Errorf("record consent: %w", err)
		}
		consent = consentResult{found: c.GetFound(), changed: c.GetChanged()}
	}
	rec, err := p.contacts.RecordInbound(ctx, org, from)
	if err != nil {
		return "", consentResult{}, fmt.Errorf("record inbound: %w", err)
	}
	return rec.GetContactId(), consent, nil
}

// signupKeyword returns the organization's sign-up keyword the whole of body is, or nil.
func (p *Processor) signupKeyword(ctx context.Context, org uuid.UUID, body string) (*store.Keyword, error) {
	word := signup.Match(body)
	if word == "" {
		return nil, nil
	}
	k, err := p.store.KeywordByWord(ctx, org, word)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find sign-up keyword: %w", err)
	}
	return &k, nil
}

// signUp opts the sender of sign-up keyword kw in through contacts, creating the contact if
// need be and adding the keyword's tag by the create's merge rules; the source
// "signup:<KEYWORD>" and the message are the audit trail's evidence. A contact whose tags are
// full (contacts refuses addTags) is opted in without the tag: nobody is turned away for that.
func (p *Processor) signUp(ctx context.Context, kw store.Keyword, m store.Message) error {
	req := &contactsv1.SetConsentRequest{
		Phone: m.ContactPhone, OptedIn: true, OccurredAt: timestamppb.New(m.CreatedAt),
		Source: "signup:" + kw.Word, MessageId: m.ID.String(), MessageText: m.Body,
		AddTags: []string{kw.Tag}, CreateIfMissing: true,
	}
	_, err := p.contacts.SetConsent(ctx, kw.OrgID, req)
	var refused *clients.Error
	if errors.As(err, &refused) && refused.Fields["addTags"] != "" {
		p.log.WarnContext(ctx, "sign-up recorded without its tag", "keyword", kw.Word, "reason", refused.Fields["addTags"])
		req.AddTags = nil
		_, err = p.contacts.SetConsent(ctx, kw.OrgID, req)
	}
	if err != nil {
		return fmt.Errorf("record sign-up: %w", err)
	}
	return nil
}

// answer returns the automatic answer to m, if any, inside tx. An opt-out (keyword or words)
// or opt-in is confirmed when it changed the contact's consent, or when the number's previous
// one here was not of the same kind: a delivery whose consent change was recorded in contacts
// but whose message was not stored here (the transaction failed) comes again and finds "no
// change", and must still be confirmed once. A repeated STOP, or "please stop texting me"
// after STOP, is not confirmed again.
func (p *Processor) answer(ctx context.Context, tx pgx.Tx, o *orgsv1.Organization, m store.Message, res classify.Result, consent consentResult) (string, error) {
	switch {
	case res.OptsOut() || res.Keyword == classify.KeywordOptIn:
		if !consent.found {
			return "", nil // no contact to confirm anything to
		}
		prev, err := p.store.LatestConsentKeyword(ctx, tx, m.OrgID, m.ContactPhone)
		if err != nil {
			return "", err
		}
		if !consent.changed && prev == res.Category {
			return "", nil
		}
		if res.Keyword == classify.KeywordOptIn {
			return optInReply(o), nil
		}
		return optOutReply(o), nil
	case res.Keyword == classify.KeywordHelp:
		return helpReply(o), nil
	default:
		return "", nil
	}
}

// queueReply queues a keyword's answer from the number the message came to. It costs no
// credits and skips the consent check: an opt-out's confirmation is the one message the law
// lets us send after it. Its route is pkg/route's, as every message's.
func (p *Processor) queueReply(ctx context.Context, tx pgx.Tx, o *orgsv1.Organization, num store.Number, to, body string, now time.Time) error {
	m := store.Message{
		ID:            uuid.Must(uuid.NewV7()),
		OrgID:         num.OrgID,
		Direction:     store.Outgoing,
		ContactPhone:  to,
		OurNumber:     num.Number,
		PhoneNumberID: &num.ID,
		Body:          body,
		IsMMS:         route.IsMMS(route.Auto, false, body),
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
		OrganizationId:   m.OrgID.String(),
		MessageId:        m.ID.String(),
		From:             m.ContactPhone,
		To:               m.OurNumber,
		ContactId:        contactID,
		Body:             m.Body,
		MediaUrls:        m.MediaURLs,
		ReceivedAt:       timestamppb.New(m.CreatedAt),
		Category:         m.Category,
		Sentiment:        m.Sentiment,
		SentimentScore:   m.SentimentScore,
		OptOutDetected:   m.OptOutDetected,
		RequiresResponse: m.RequiresResponse,
	}
	if m.AttributedTo != nil {
		ev.Attribution = &eventsv1.Attribution{MessageId: last.ID.String(), SourceKind: last.SourceKind, SourceId: last.SourceID}
	}
	return outbox.Enqueue(ctx, tx, outbox.Event{Type: EventMessageReceived, OrgID: m.OrgID, Payload: ev})
}

// ContactDeleted is the one event type of contacts' stream that messaging acts on.
const ContactDeleted = "contact.deleted"

// ContactDeletedHandler drops a deleted contact's thread: messages, short links and the
// conversation, up to the deletion time (later messages from the number start a new thread).
func ContactDeletedHandler(st *store.Store) outbox.Handler {
	return func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		if m.Type != ContactDeleted {
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
