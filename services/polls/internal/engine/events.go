package engine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/outbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/polls/internal/questions"
	"github.com/chorus-sms/chorus/services/polls/internal/store"
)

// The events polls follow (types as their producers' outboxes name them).
const (
	eventReceived       = "message.received"
	eventStatusChanged  = "message.status_changed"
	eventConsentChanged = "contact.consent_changed"
	eventContactDeleted = "contact.deleted"
	categoryOptOut      = "opt_out"
)

// replyPartitions is how many transactions apply a read of replies at once.
const replyPartitions = 8

// MessagingEvents limits the consumer of MessagingHandler to the events it acts on: every
// message.received, and the status events saying a poll's message reached the carrier (the
// status events of every other message are acknowledged without a transaction). A read's
// events are applied in partitions by contact phone: one contact's replies and question
// statuses in stream order, in one transaction, different contacts' at once.
func MessagingEvents() []outbox.Option {
	return []outbox.Option{
		outbox.WithTypes(eventReceived, eventStatusChanged), outbox.WithFilter(wanted),
		outbox.WithPartitions(replyPartitions, contactPhone),
	}
}

// wanted keeps every message.received and a poll message's status event saying it reached
// the carrier.
func wanted(m outbox.Message) bool {
	if m.Type != eventStatusChanged {
		return true
	}
	var ev eventsv1.MessageStatusChanged
	if err := m.Unmarshal(&ev); err != nil {
		return true // the handler reports it
	}
	return ev.GetSourceKind() == SourceKind && reachedCarrier(ev.GetStatus())
}

// reachedCarrier: sent and delivered say the carrier took the message (undelivered comes
// after sent, failed never reached anyone).
func reachedCarrier(status string) bool { return status == "sent" || status == "delivered" }

// contactPhone is the partition key of messaging's events: a message.received's sender, a
// status event's recipient.
func contactPhone(m outbox.Message) string {
	if m.Type == eventStatusChanged {
		var ev eventsv1.MessageStatusChanged
		if err := m.Unmarshal(&ev); err != nil {
			return ""
		}
		return ev.GetTo()
	}
	var ev eventsv1.MessageReceived
	if err := m.Unmarshal(&ev); err != nil {
		return "" // the handler reports it; any partition will do
	}
	return ev.GetFrom()
}

// ContactsEvents limits the consumer of ContactsHandler to the events it acts on.
func ContactsEvents() outbox.Option {
	return outbox.WithTypes(eventConsentChanged, eventContactDeleted)
}

// MessagingHandler applies messaging's message.received and a poll message's status event
// to polls, in the consumer's transaction that records the event as processed, so a
// redelivered inbound advances a participant once. A status event saying a step's message
// reached the carrier makes the step asked (statusTx). A reply is the answer of the sender's
// participation in progress, whatever the reply's attribution, once its question was asked: a
// contact is in one poll at a time, and an agent's conversation reply or a campaign message in
// between does not lose the answer. An opt-out (a keyword, or a revocation in words messaging
// is sure of: category opt_out) terminates the contact's participations at once. A doubtful
// one (optOutDetected without that category: "leave me alone") is left to a person, who opts
// the contact out through the API or not: it neither ends the participation, which would
// take a decision the law leaves to them, nor answers the question, which would send the next
// one to someone who may have asked for no more.
func (r *Runner) MessagingHandler() outbox.Handler {
	return func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		if m.Type == eventStatusChanged {
			return r.statusTx(ctx, tx, m)
		}
		if m.Type != eventReceived {
			return nil
		}
		var ev eventsv1.MessageReceived
		if err := m.Unmarshal(&ev); err != nil {
			return err
		}
		contact, err := uuid.Parse(ev.GetContactId())
		if err != nil {
			return nil // no contact has the sender's phone: in no poll
		}
		if ev.GetCategory() == categoryOptOut {
			return r.optOutTx(ctx, tx, m.OrgID, contact)
		}
		if ev.GetOptOutDetected() {
			return nil // a doubtful opt-out: a person decides (see MessagingHandler)
		}
		return r.replyTx(ctx, tx, m.OrgID, contact, &ev)
	}
}

// ContactsHandler applies contacts' events: an opt-out (however recorded: keyword, carrier,
// API) terminates the contact's participations; a deletion removes them with their responses.
func (r *Runner) ContactsHandler() outbox.Handler {
	return func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		switch m.Type {
		case eventConsentChanged:
			var ev eventsv1.ContactConsentChanged
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			contact, err := uuid.Parse(ev.GetContactId())
			if err != nil || ev.GetIsOptedIn() {
				return nil
			}
			return r.optOutTx(ctx, tx, m.OrgID, contact)
		case eventContactDeleted:
			var ev eventsv1.ContactDeleted
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			contact, err := uuid.Parse(ev.GetContactId())
			if err != nil {
				return nil
			}
			ended, err := r.store.DeleteContact(ctx, tx, m.OrgID, contact)
			if err != nil {
				return err
			}
			for _, e := range ended {
				if err := r.finishIfDoneTx(ctx, tx, m.OrgID, e.Poll); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// optOutTx terminates the contact's participations in progress and waiting: nothing more is
// sent to them (messaging withdraws what is queued for an opted-out number).
func (r *Runner) optOutTx(ctx context.Context, tx pgx.Tx, org, contact uuid.UUID) error {
	ended, err := r.store.TerminateContact(ctx, tx, org, contact, store.ReasonOptedOut, r.now())
	if err != nil {
		return err
	}
	for _, e := range ended {
		if err := r.finishIfDoneTx(ctx, tx, org, e.Poll); err != nil {
			return err
		}
	}
	return nil
}

// statusTx records that the poll message of m (keyed "poll:<poll>:<contact>:<step>:<part>")
// reached the carrier: its step is asked, and a reply now answers it. The participant's row
// lock orders it with a reply handled at the same moment: a reply handled first found the
// question not asked and stays an ordinary inbound message.
func (r *Runner) statusTx(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
	var ev eventsv1.MessageStatusChanged
	if err := m.Unmarshal(&ev); err != nil {
		return err
	}
	if ev.GetSourceKind() != SourceKind || !reachedCarrier(ev.GetStatus()) {
		return nil
	}
	poll, contact, step, ok := parseKey(ev.GetDedupeKey())
	if !ok {
		return nil // not a step's message
	}
	at := ev.GetOccurredAt().AsTime()
	if !ev.GetOccurredAt().IsValid() || at.Unix() <= 0 {
		at = r.now()
	}
	_, err := r.store.MarkAsked(ctx, tx, m.OrgID, poll, contact, step, at)
	return err
}

// parseKey reads a step message's dedupe key "poll:<poll>:<contact>:<step>:<part>" (Messages).
func parseKey(key string) (poll, contact uuid.UUID, step int32, ok bool) {
	parts := strings.Split(key, ":")
	if len(parts) != 5 || parts[0] != SourceKind {
		return uuid.Nil, uuid.Nil, 0, false
	}
	poll, err1 := uuid.Parse(parts[1])
	contact, err2 := uuid.Parse(parts[2])
	n, err3 := strconv.ParseInt(parts[3], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || n < 1 {
		return uuid.Nil, uuid.Nil, 0, false
	}
	return poll, contact, int32(n), true
}

// replyTx reads ev as the answer to the question the contact's participation awaits, only once
// that question reached the carrier (asked): a reply while no question was asked yet, or while
// the current one (a next question, a re-ask) still waits in messaging's queue, answers
// nothing and stays an ordinary inbound message of the conversation. A valid answer is stored under the question's
// responseCode and the participant moves to the next question on its path, or completes (the
// outro, and the poll's completion target); an invalid one gets the question again with the
// valid codes, at most maxReasks times in a row, after which the participant stays on it.
// Paused polls record answers too; their next questions leave at the resume.
func (r *Runner) replyTx(ctx context.Context, tx pgx.Tx, org, contact uuid.UUID, ev *eventsv1.MessageReceived) error {
	p, err := r.store.InProgress(ctx, tx, org, contact)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if p.AskedStep < p.Step || p.Pending == nil {
		return nil // its question has not reached the carrier: nothing is asked yet
	}
	var msgID *uuid.UUID
	if id, err := uuid.Parse(ev.GetMessageId()); err == nil {
		msgID = &id
		if first, err := r.store.FirstHandling(ctx, tx, org, id); err != nil || !first {
			return err
		}
	}
	poll, err := r.store.GetTx(ctx, tx, org, p.PollID)
	if err != nil {
		return err
	}
	if poll.Status != store.StatusActive && poll.Status != store.StatusPaused {
		return nil
	}
	now := ev.GetReceivedAt().AsTime()
	if now.IsZero() || now.Unix() == 0 {
		now = r.now()
	}
	q := questions.ByNumber(poll.Questions, int(p.CurrentQuestion))
	if q == nil { // the question was removed by an update while paused: the path ends here
		return r.completeTx(ctx, tx, &poll, &p, now)
	}
	reply := strings.TrimSpace(ev.GetBody())
	code, ok := q.Match(reply)
	if !ok {
		if p.Reasks >= poll.MaxReasks {
			return nil // stays on the question
		}
		p.Reasks++
		return r.advanceTx(ctx, tx, &p, store.PendingReask, now)
	}
	added, err := r.store.AddResponse(ctx, tx, &p, store.Response{
		QuestionNumber: int32(q.Number), ResponseCode: q.ResponseCode, Answer: reply, OptionCode: code,
		MessageID: msgID, ReceivedAt: now,
	})
	if err != nil || !added {
		return err
	}
	p.ResponseCount++
	p.LastResponseAt = &now
	p.Reasks = 0
	next := q.Next(code, len(poll.Questions))
	if next == 0 {
		return r.completeTx(ctx, tx, &poll, &p, now)
	}
	p.CurrentQuestion = int32(next)
	return r.advanceTx(ctx, tx, &p, store.PendingQuestion, now)
}

// advanceTx gives p its next step (pending) and queues the step's job, inside tx.
func (r *Runner) advanceTx(ctx context.Context, tx pgx.Tx, p *store.Participant, pending string, now time.Time) error {
	p.Step++
	p.Pending = &pending
	if err := r.store.SaveProgress(ctx, tx, p, now); err != nil {
		return err
	}
	return r.stepsTx(ctx, tx, []store.Begun{{Participant: p.ID, Poll: p.PollID, Org: p.OrgID, Contact: p.ContactID, Step: p.Step}})
}

// completeTx completes p: its outro is queued, the poll counts it, and the poll closes itself
// when its completion target is reached (participants in progress terminated; the outros keep
// going, as they carry no hold); the contact may then begin a poll it waits for.
func (r *Runner) completeTx(ctx context.Context, tx pgx.Tx, poll *store.Poll, p *store.Participant, now time.Time) error {
	p.Status, p.CompletedAt = store.Completed, &now
	if err := r.advanceTx(ctx, tx, p, store.PendingOutro, now); err != nil {
		return err
	}
	n, err := r.store.CountCompleted(ctx, tx, p.OrgID, p.PollID)
	if err != nil {
		return err
	}
	if poll.CompletionTargetEnabled && poll.CompletionTarget != nil && n >= *poll.CompletionTarget {
		if err := r.CloseTx(ctx, tx, p.OrgID, p.PollID, false); err != nil {
			return err
		}
	}
	return r.freedTx(ctx, tx, p.OrgID, []store.Ended{{Poll: p.PollID, Contact: p.ContactID, Was: store.InProgress}})
}
