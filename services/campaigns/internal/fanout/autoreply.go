package fanout

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/smsrules"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/autoreply"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

// AutoReplySourceKind is messaging's source kind of a campaign's auto-reply (source id the
// campaign): sent whatever the hour, billed like a reply.
const AutoReplySourceKind = "auto_reply"

// attributedCampaign is the campaign an inbound message answers: one whose message or
// auto-reply was the latest sent to the sender (a conversation the campaign started).
func attributedCampaign(a *eventsv1.Attribution) (uuid.UUID, bool) {
	if a.GetSourceKind() == AutoReplySourceKind {
		return campaignOf(SourceKind, a.GetSourceId())
	}
	return campaignOf(a.GetSourceKind(), a.GetSourceId())
}

// autoReplyTx chooses campaign's answer to an inbound message (no opt-out: the caller checked)
// and, when there is one the sender's contact has not had yet, records it and queues its
// send, inside the consumer's tx: so one inbound message gets at most one answer, however
// often its event comes. A sender no contact has gets none.
func (r *Runner) autoReplyTx(ctx context.Context, tx pgx.Tx, org, campaign uuid.UUID, ev *eventsv1.MessageReceived) error {
	if ev.GetContactId() == "" {
		return nil
	}
	inbound, err := uuid.Parse(ev.GetMessageId())
	if err != nil {
		return fmt.Errorf("inbound message id %q: %w", ev.GetMessageId(), err)
	}
	c, err := r.store.GetTx(ctx, tx, org, campaign)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (!c.AutoReplyEnabled || answersHeld(&c))) {
		return nil
	}
	if err != nil {
		return err
	}
	answer, ok := autoreply.Choose(rulesOf(&c), ev.GetCategory(), ev.GetBody())
	if !ok {
		return nil
	}
	body := answer.Body
	if c.NormalizeText {
		body = smsrules.Normalize(body)
	}
	added, err := r.store.AddAutoReply(ctx, tx, store.AutoReply{
		InboundID: inbound, OrgID: org, CampaignID: campaign, Phone: ev.GetFrom(), AnswerKey: answer.Key, Body: body,
		OurNumber: ev.GetTo(),
	})
	if err != nil || !added {
		return err
	}
	if _, err := r.InsertTx(ctx, tx, autoReplyArgs{OrgID: org, InboundID: inbound}, nil); err != nil {
		return fmt.Errorf("queue auto-reply: %w", err)
	}
	return nil
}

// answersHeld says c gives no automatic answer now: a paused campaign sends nothing (a message
// that comes while it is paused is never answered, not even after resume) and a canceled one
// has stopped for good. A campaign that completed still answers the people it texted.
func answersHeld(c *store.Campaign) bool {
	return c.Status == store.StatusPaused || c.CanceledAt != nil
}

func rulesOf(c *store.Campaign) autoreply.Rules {
	r := autoreply.Rules{FAQ: make([]autoreply.FAQ, len(c.FaqReplies))}
	if c.YesResponse != nil {
		r.Yes = *c.YesResponse
	}
	if c.NoResponse != nil {
		r.No = *c.NoResponse
	}
	for i, f := range c.FaqReplies {
		r.FAQ[i] = autoreply.FAQ{Question: f.Question, Answer: f.Answer}
	}
	return r
}

// autoReplyArgs is the job of handing one recorded auto-reply to messaging; unique per
// inbound message.
type autoReplyArgs struct {
	OrgID     uuid.UUID `json:"organization_id"`
	InboundID uuid.UUID `json:"inbound_message_id" river:"unique"`
}

func (autoReplyArgs) Kind() string { return "campaigns.auto_reply" }

// autoReplyAttempts bounds an answer messaging keeps failing to take (River's backoff: about
// an hour in all): a later answer would no longer be one.
const autoReplyAttempts = 8

func (autoReplyArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: autoReplyAttempts}
}

type autoReplyWorker struct {
	river.WorkerDefaults[autoReplyArgs]
	r *Runner
}

func (w *autoReplyWorker) Work(ctx context.Context, job *river.Job[autoReplyArgs]) error {
	err := w.r.sendAutoReply(ctx, job.Args)
	var held *river.JobSnoozeError
	if errors.As(err, &held) {
		return err // its campaign is paused: it goes on resume
	}
	if err != nil && job.Attempt >= job.MaxAttempts {
		return w.r.store.SettleAutoReply(context.WithoutCancel(ctx), job.Args.OrgID, job.Args.InboundID,
			store.AutoReplyFailed, apierr.ReasonUnavailable, nil)
	}
	if err != nil {
		return fmt.Errorf("auto-reply to %s: %w", job.Args.InboundID, err)
	}
	return nil
}

// sendAutoReply hands a queued answer to messaging under the dedupe key
// "auto_reply:<inbound message id>", so a retried job or a restart queues it once. A contact
// that may not be texted now (opted out since it wrote) is skipped, leaving nothing in its
// thread; messaging checks consent again right before the carrier. An answer chosen before
// its campaign was paused waits for the resume (snoozed, looking again every pausedRecheck);
// one whose campaign was canceled is skipped (SOURCE_CANCELED).
func (r *Runner) sendAutoReply(ctx context.Context, args autoReplyArgs) error {
	a, err := r.store.AutoReply(ctx, args.OrgID, args.InboundID)
	if errors.Is(err, store.ErrNoAutoReply) {
		return nil // its campaign was deleted
	}
	if err != nil || a.Status != store.AutoReplyQueued {
		return err
	}
	c, err := r.store.Get(ctx, a.OrgID, a.CampaignID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("auto-reply's campaign: %w", err)
	}
	switch {
	case c.CanceledAt != nil:
		return r.store.SettleAutoReply(ctx, a.OrgID, a.InboundID, store.AutoReplySkipped, apierr.ReasonSourceCanceled, nil)
	case c.Status == store.StatusPaused:
		return river.JobSnooze(pausedRecheck)
	}
	checks, err := r.peers.Contacts.CheckSendable(ctx, a.OrgID, []string{a.Phone})
	if err != nil {
		return fmt.Errorf("check consent: %w", err)
	}
	if len(checks) != 1 || !checks[0].GetSendable() {
		reason := apierr.ReasonNotSendable
		if len(checks) == 1 && checks[0].GetReason() == contactsv1.SendableReason_SENDABLE_REASON_OPTED_OUT {
			reason = apierr.ReasonContactOptedOut
		}
		return r.store.SettleAutoReply(ctx, a.OrgID, a.InboundID, store.AutoReplySkipped, reason, nil)
	}
	from, err := r.autoReplyNumber(ctx, &a)
	if err != nil {
		return err
	}
	ids, err := r.peers.Messaging.SendMessages(ctx, a.OrgID, []*messagingv1.OutgoingMessage{{
		DedupeKey: "auto_reply:" + a.InboundID.String(), To: a.Phone, Body: a.Body, FromPhoneNumberId: from,
		SourceKind: AutoReplySourceKind, SourceId: a.CampaignID.String(),
	}})
	if reason := refusal(err); reason != "" {
		return r.store.SettleAutoReply(ctx, a.OrgID, a.InboundID, store.AutoReplyFailed, reason, nil)
	}
	if err != nil {
		return fmt.Errorf("queue auto-reply: %w", err)
	}
	id, err := uuid.Parse(ids[0])
	if err != nil {
		return fmt.Errorf("messaging's message id %q: %w", ids[0], err)
	}
	return r.store.SettleAutoReply(ctx, a.OrgID, a.InboundID, store.AutoReplySent, "", &id)
}

// autoReplyNumber is the number id an answer goes from: of a pool campaign, the pool number
// the contact texted (their thread), else the campaign's number. A campaign without a pool
// asks messaging nothing.
func (r *Runner) autoReplyNumber(ctx context.Context, a *store.AutoReply) (string, error) {
	from := ""
	if a.FromPhoneNumberID != nil {
		from = a.FromPhoneNumberID.String()
	}
	if len(a.Pool) < 2 || a.OurNumber == "" {
		return from, nil
	}
	ids := make([]string, len(a.Pool))
	for i, id := range a.Pool {
		ids[i] = id.String()
	}
	numbers, err := r.peers.Messaging.FindPhoneNumbers(ctx, a.OrgID, ids)
	if err != nil {
		return "", fmt.Errorf("auto-reply's pool numbers: %w", err)
	}
	for _, n := range numbers {
		if n.GetNumber() == a.OurNumber {
			return n.GetPhoneNumberId(), nil
		}
	}
	return from, nil
}
