package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/quiethours"
	"github.com/chorus-sms/chorus/pkg/route"
	"github.com/chorus-sms/chorus/pkg/tenant"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// maxQueued bounds one SendMessages or QueueBulk call.
const maxQueued = 1000

// SendMessages stores messages for campaigns and polls (and campaigns' test copies: free,
// never held for quiet hours; and their auto-replies: sent like replies) and queues their
// dispatch, in one transaction; a message whose dedupe key was used before is not queued
// again. A request with the deprecated bulk flag is a QueueBulk (an older campaigns replica's
// during a rolling update).
func (s *Server) SendMessages(ctx context.Context, req *messagingv1.SendMessagesRequest) (*messagingv1.SendMessagesResponse, error) {
	if req.GetBulk() {
		if _, err := s.QueueBulk(ctx, &messagingv1.QueueBulkRequest{Messages: req.GetMessages()}); err != nil {
			return nil, err
		}
		return &messagingv1.SendMessagesResponse{}, nil
	}
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	out, err := s.outgoing(ctx, org, req.GetMessages(), false)
	if err != nil {
		return nil, err
	}
	err = s.cfg.Store.InTx(ctx, func(tx pgx.Tx) error {
		queued, err := s.cfg.Store.InsertOutgoingMany(ctx, tx, out.msgs)
		if err != nil {
			return err
		}
		if err := s.insertLinks(ctx, tx, org, queued, out.short); err != nil {
			return err
		}
		return s.cfg.Dispatch.QueueTx(ctx, tx, org, queued...)
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(out.msgs))
	for i, m := range out.msgs {
		ids[i] = m.ID.String()
	}
	return &messagingv1.SendMessagesResponse{MessageIds: ids}, nil
}

// outgoing is a validated SendMessages or QueueBulk request.
type outgoing struct {
	msgs  []*store.Message
	short shortLinks // of auto-replies
	now   time.Time
}

// outgoing validates up to maxQueued messages of org (a bulk batch's only of campaigns and
// polls, to E.164 recipients) and builds what is stored of them. A suspended account's
// messages are refused whole (BILLING_SUSPENDED), as billing would refuse every one.
func (s *Server) outgoing(ctx context.Context, org uuid.UUID, in []*messagingv1.OutgoingMessage, bulk bool) (*outgoing, error) {
	if n := len(in); n == 0 || n > maxQueued {
		return nil, apierr.Field("messages", fmt.Sprintf("must hold 1 to %d messages", maxQueued))
	}
	o, err := s.cfg.Orgs.Organization(ctx, org)
	if err != nil {
		return nil, err
	}
	if !o.GetSandbox() { // sandbox messages are free
		suspended, err := s.cfg.Billing.Suspended(ctx, org)
		if err != nil {
			return nil, fmt.Errorf("billing status: %w", err)
		}
		if suspended {
			return nil, errSuspended
		}
	}
	provider := s.cfg.Dispatch.ProviderFor(o.GetSandbox()).Name()
	numbers := map[string]*store.Number{}
	out := &outgoing{short: shortLinks{}, now: time.Now()}
	msgs := make([]store.Message, len(in))
	for i, in := range in {
		field := "messages[" + strconv.Itoa(i) + "]"
		to, err := recipient(in.GetTo(), bulk)
		if err != nil {
			return nil, apierr.Field(field+".to", err.Error())
		}
		f := apierr.Fields{}
		if in.GetBody() == "" {
			f.Add(field+".body", "must not be empty")
		}
		if in.GetDedupeKey() == "" {
			f.Add(field+".dedupeKey", "must not be empty")
		}
		forced, ok := route.Parse(in.GetForceRoute())
		if !ok {
			f.Add(field+".forceRoute", route.Invalid)
		}
		if id := in.GetHoldId(); id != "" {
			if _, err := uuid.Parse(id); err != nil {
				f.Add(field+".holdId", "must be the UUID of a billing hold")
			}
		}
		if err := f.Err(); err != nil {
			return nil, err
		}
		kind := in.GetSourceKind()
		if kind != store.SourceCampaign && kind != store.SourcePoll && kind != store.SourceTest && kind != store.SourceAutoReply {
			return nil, apierr.Field(field+".sourceKind", "must be campaign, poll, test or auto_reply")
		}
		test, autoReply := kind == store.SourceTest, kind == store.SourceAutoReply
		if bulk && (test || autoReply) {
			return nil, apierr.Field(field+".sourceKind", "must be campaign or poll in a bulk batch")
		}
		for _, z := range [...]struct{ name, tz string }{{"quietHoursTimezone", in.GetQuietHoursTimezone()}, {"recipientTimezone", in.GetRecipientTimezone()}} {
			if z.tz == "" || test || autoReply {
				continue
			}
			if _, err := quiethours.Location(z.tz); err != nil {
				return nil, apierr.Field(field+"."+z.name, "must be an IANA timezone")
			}
		}
		from, ok := numbers[in.GetFromPhoneNumberId()]
		if !ok {
			if id := in.GetFromPhoneNumberId(); id != "" {
				if _, err := uuid.Parse(id); err != nil {
					return nil, apierr.Field(field+".fromPhoneNumberId", "must be a UUID")
				}
			}
			if from, err = s.fromNumber(ctx, org, in.GetFromPhoneNumberId(), true); err != nil {
				return nil, err
			}
			numbers[in.GetFromPhoneNumberId()] = from
		}
		var media []string
		if in.GetMediaUrl() != "" {
			media = []string{in.GetMediaUrl()}
		}
		media = append(media, in.GetMediaUrls()...)
		quietZone, recipientZone, hold := in.GetQuietHoursTimezone(), in.GetRecipientTimezone(), in.GetHoldId()
		if test || autoReply { // at once; a test copy costs nothing, an auto-reply holds its own credits
			quietZone, recipientZone, hold = "", "", ""
		}
		state := ""
		// A message with quiet hours keeps to its recipient's state law too, unless the
		// organization turned state rules off.
		if (quietZone != "" || recipientZone != "") && !o.GetStateQuietHoursOff() {
			state = quiethours.RecipientState(in.GetRecipientState(), to)
		}
		id, body := uuid.Must(uuid.NewV7()), in.GetBody()
		if autoReply {
			if body, err = s.autoReplyText(o, field, id, body, out.short); err != nil {
				return nil, err
			}
		}
		mms, price := route.Price(forced, len(media) > 0, body)
		msgs[i] = store.Message{
			ID:                id,
			OrgID:             org,
			Direction:         store.Outgoing,
			ContactPhone:      to,
			OurNumber:         from.Number,
			PhoneNumberID:     &from.ID,
			Body:              body,
			MediaURLs:         media,
			IsMMS:             mms,
			Status:            store.StatusQueued,
			Provider:          provider,
			Credits:           price,
			Billable:          !o.GetSandbox() && !test,
			HoldID:            hold,
			SourceKind:        in.GetSourceKind(),
			SourceID:          in.GetSourceId(),
			DedupeKey:         in.GetDedupeKey(),
			QuietTimezone:     quietZone,
			RecipientTimezone: recipientZone,
			RecipientState:    state,
			CreatedAt:         out.now,
		}
	}
	out.msgs = make([]*store.Message, len(msgs))
	for i := range msgs {
		out.msgs[i] = &msgs[i]
	}
	return out, nil
}

// recipient is a message's recipient in E.164. A bulk batch carries its audience's stored
// phones, which contacts checked when it stored them: it must give them in E.164 and they are
// not looked up again (the phone-number metadata check was half of a bulk batch's cost); a
// number the carrier then refuses fails alone, counted as failed.
func recipient(to string, bulk bool) (string, error) {
	if bulk {
		if !phone.IsE164(to) {
			return "", errors.New("must be an E.164 phone number in a bulk batch")
		}
		return to, nil
	}
	e164, err := phone.Normalize(to)
	if err != nil {
		return "", errors.New("must be a phone number")
	}
	return e164, nil
}

// SetSourceState pauses, resumes or cancels a campaign's or poll's queued messages, or a
// campaign's queued auto-replies (source kind auto_reply, source id the campaign); a cancel
// has withdrawn the queued ones when it answers.
func (s *Server) SetSourceState(ctx context.Context, req *messagingv1.SetSourceStateRequest) (*messagingv1.SetSourceStateResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	f := apierr.Fields{}
	if k := req.GetSourceKind(); k != store.SourceCampaign && k != store.SourcePoll && k != store.SourceAutoReply {
		f.Add("sourceKind", "must be campaign, poll or auto_reply")
	}
	if req.GetSourceId() == "" {
		f.Add("sourceId", "must not be empty")
	}
	switch req.GetState() {
	case store.SourceActive, store.SourcePaused, store.SourceCanceled:
	default:
		f.Add("state", "must be active, paused or canceled")
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	if err := s.setSourceState(ctx, org, req.GetSourceKind(), req.GetSourceId(), req.GetState()); err != nil {
		return nil, err
	}
	return &messagingv1.SetSourceStateResponse{}, nil
}

// setSourceState sets a source's state and, when it goes on (active), wakes its messages and
// bulk batches that waited.
func (s *Server) setSourceState(ctx context.Context, org uuid.UUID, kind, id, state string) error {
	if err := s.cfg.Dispatch.SetSourceState(ctx, org, kind, id, state); err != nil {
		return err
	}
	if state != store.SourceActive {
		return nil
	}
	if err := s.cfg.Dispatch.WakeSource(ctx, org, kind, id); err != nil {
		return err
	}
	s.cfg.Dispatch.WakeExpander() // its bulk batches waited too
	return nil
}
