package fanout

import (
	"context"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/outbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

// The messaging events the counters follow (types as messaging's outbox names them).
const (
	eventStatusChanged = "message.status_changed"
	eventReceived      = "message.received"
	eventLinkClicked   = "link.clicked"
	categoryOptOut     = "opt_out"
)

// EventHandler applies messaging's events to campaigns, in the consumer's transaction that
// records the event as processed, so each counts once: a campaign message's status moves its
// recipient forward and the campaign's counters with it (completing the campaign when it was
// the last outcome), a reply attributed to a campaign counts unless it is an opt-out (and for
// its A/B sample, if the sender is in one) and gets the campaign's auto-reply when it has one,
// and a click on a campaign's short link counts (a test copy's link is source kind "test": no
// campaign's).
func EventHandler(st *store.Store, r *Runner) outbox.Handler {
	return func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		switch m.Type {
		case eventStatusChanged:
			var ev eventsv1.MessageStatusChanged
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			campaign, ok := campaignOf(ev.GetSourceKind(), ev.GetSourceId())
			if !ok {
				return nil
			}
			// A message withdrawn before the carrier saw it, by the campaign's cancel or because
			// its contact was deleted or opted out meanwhile, was never sent and is no failure.
			counted := !apierr.Withdrawn(ev.GetErrorCode())
			who := store.Who{Contact: recipientOf(campaign, ev.GetDedupeKey()), Phone: ev.GetTo()}
			moved, err := st.ApplyStatus(ctx, tx, m.OrgID, campaign, who, ev.GetStatus(), counted)
			if err != nil || !moved {
				return err
			}
			return r.completeTx(ctx, tx, m.OrgID, campaign)
		case eventReceived:
			var ev eventsv1.MessageReceived
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			campaign, ok := attributedCampaign(ev.GetAttribution())
			if !ok || ev.GetOptOutDetected() || ev.GetCategory() == categoryOptOut {
				return nil
			}
			if err := st.CountReply(ctx, tx, m.OrgID, campaign, ev.GetReceivedAt().AsTime()); err != nil {
				return err
			}
			contact, _ := uuid.Parse(ev.GetContactId()) // none: by phone
			if err := st.CountVariantReply(ctx, tx, m.OrgID, campaign, store.Who{Contact: contact, Phone: ev.GetFrom()}); err != nil {
				return err
			}
			return r.autoReplyTx(ctx, tx, m.OrgID, campaign, &ev)
		case eventLinkClicked:
			var ev eventsv1.LinkClicked
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			campaign, ok := campaignOf(ev.GetSourceKind(), ev.GetSourceId())
			if !ok {
				return nil
			}
			return st.CountClick(ctx, tx, m.OrgID, campaign)
		}
		return nil
	}
}

// EventBatch applies a read's events with EventHandler one after another in the consumer's
// transaction, which recorded them all as processed in one statement: no savepoint and no
// insert per event (most of messaging's events are other sources' messages and need no
// statement at all). When one fails, the consumer applies the read again event by event, so
// the failure stays that event's alone.
func EventBatch(st *store.Store, r *Runner) outbox.BatchHandler {
	h := EventHandler(st, r)
	return func(ctx context.Context, tx pgx.Tx, msgs []outbox.Message) error {
		for _, m := range msgs {
			if err := h(ctx, tx, m); err != nil {
				return err
			}
		}
		return nil
	}
}

// EventTypes limits the consumer to the event types EventHandler acts on: messaging's other
// events (message.created, one per message stored) are acknowledged without a transaction.
func EventTypes() outbox.Option {
	return outbox.WithTypes(eventStatusChanged, eventReceived, eventLinkClicked)
}

// recipientOf is the contact a message of campaign was sent to, from its dedupe key
// ("campaign:<campaign id>:<contact id>", see outgoing.messages); uuid.Nil when the key is
// not one (an event published before messaging named the key).
func recipientOf(campaign uuid.UUID, dedupeKey string) uuid.UUID {
	rest, ok := strings.CutPrefix(dedupeKey, dedupePrefix(campaign.String()))
	if !ok {
		return uuid.Nil
	}
	contact, err := uuid.Parse(rest)
	if err != nil {
		return uuid.Nil
	}
	return contact
}

func campaignOf(kind, id string) (uuid.UUID, bool) {
	if kind != SourceKind {
		return uuid.Nil, false
	}
	c, err := uuid.Parse(id)
	return c, err == nil
}
