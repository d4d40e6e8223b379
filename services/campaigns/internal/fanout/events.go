package fanout

import (
	"bytes"
	"context"
	"maps"
	"slices"
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
	eventStatusChanged   = "message.status_changed"
	eventStatusesChanged = "messages.status_changed" // many messages' changes, one statement's
	eventReceived        = "message.received"
	eventLinkClicked     = "link.clicked"
	categoryOptOut       = "opt_out"
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
		case eventStatusChanged, eventStatusesChanged:
			groups := statusGroups{}
			if err := groups.add(m); err != nil {
				return err
			}
			return groups.apply(ctx, tx, st, r)
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

// EventBatch applies a read's events in the consumer's transaction, which recorded them all as
// processed in one statement: no savepoint and no insert per event (most of messaging's events
// are other sources' messages and need no statement at all). The status events are applied per
// campaign, all of a campaign's in the read at once (store.ApplyStatuses, then one completion
// check), after the read's other events, which EventHandler applies one after another. When
// anything fails, the consumer applies the read again event by event with EventHandler, so the
// failure stays that event's alone.
//
// Moving a campaign's status events after its replies and clicks of the same read changes no
// result: status events write the recipients' statuses, the campaign's outcome counters and
// its completion, and replies and clicks neither read nor write those (they add to reply and
// click counters, mark a sample's recipient as replied, and read the campaign's pause, cancel
// and auto-reply settings, which completion leaves alone: a completed campaign still answers);
// each side's counter updates are additions, which commute. Different campaigns' status
// events touch different rows, so their order between campaigns does not matter either.
func EventBatch(st *store.Store, r *Runner) outbox.BatchHandler {
	h := EventHandler(st, r)
	return func(ctx context.Context, tx pgx.Tx, msgs []outbox.Message) error {
		groups := statusGroups{}
		for _, m := range msgs {
			if m.Type != eventStatusChanged && m.Type != eventStatusesChanged {
				if err := h(ctx, tx, m); err != nil {
					return err
				}
				continue
			}
			if err := groups.add(m); err != nil {
				return err
			}
		}
		return groups.apply(ctx, tx, st, r)
	}
}

// statusGroups are status changes of campaigns' messages, per campaign.
type statusGroups map[campaignKey][]store.StatusChange

// add adds the changes of m, a message.status_changed or messages.status_changed event.
func (g statusGroups) add(m outbox.Message) error {
	changes, err := statusChanges(m)
	for _, c := range changes {
		k := campaignKey{org: m.OrgID, campaign: c.campaign}
		g[k] = append(g[k], c.change)
	}
	return err
}

// apply applies each campaign's changes at once (store.ApplyStatuses, then one completion
// check), campaigns in a fixed order, so that two members applying reads of the same
// campaigns lock their rows in the same order.
func (g statusGroups) apply(ctx context.Context, tx pgx.Tx, st *store.Store, r *Runner) error {
	keys := slices.SortedFunc(maps.Keys(g), func(a, b campaignKey) int {
		if c := bytes.Compare(a.campaign[:], b.campaign[:]); c != 0 {
			return c
		}
		return bytes.Compare(a.org[:], b.org[:])
	})
	for _, k := range keys {
		moved, err := st.ApplyStatuses(ctx, tx, k.org, k.campaign, g[k])
		if err != nil {
			return err
		}
		if moved > 0 {
			if err := r.completeTx(ctx, tx, k.org, k.campaign); err != nil {
				return err
			}
		}
	}
	return nil
}

// campaignKey is an organization's campaign, as a status event names it.
type campaignKey struct{ org, campaign uuid.UUID }

// campaignChange is a status change of one campaign's message.
type campaignChange struct {
	campaign uuid.UUID
	change   store.StatusChange
}

// statusChanges reads a message.status_changed or messages.status_changed event: the changes
// of campaigns' messages it tells, each with its campaign; other messages' are left out.
func statusChanges(m outbox.Message) ([]campaignChange, error) {
	if m.Type == eventStatusChanged {
		var ev eventsv1.MessageStatusChanged
		if err := m.Unmarshal(&ev); err != nil {
			return nil, err
		}
		return appendChange(nil, &ev), nil
	}
	var ev eventsv1.MessagesStatusChanged
	if err := m.Unmarshal(&ev); err != nil {
		return nil, err
	}
	var out []campaignChange
	for _, c := range ev.GetChanges() {
		out = appendChange(out, c)
	}
	return out, nil
}

// appendChange appends ev's change for its recipient to out when its message is a campaign's.
func appendChange(out []campaignChange, ev *eventsv1.MessageStatusChanged) []campaignChange {
	campaign, ok := campaignOf(ev.GetSourceKind(), ev.GetSourceId())
	if !ok {
		return out
	}
	return append(out, campaignChange{campaign: campaign, change: store.StatusChange{
		Who:    store.Who{Contact: recipientOf(campaign, ev.GetDedupeKey()), Phone: ev.GetTo()},
		Status: ev.GetStatus(),
		// A message withdrawn before the carrier saw it, by the campaign's cancel or because
		// its contact was deleted or opted out meanwhile, was never sent and is no failure.
		CountFailure: !apierr.Withdrawn(ev.GetErrorCode()),
		// One skipped for the organization's frequency cap is withdrawn too, counted apart.
		Skipped: apierr.Skipped(ev.GetErrorCode()),
	}})
}

// EventTypes limits the consumer to the event types EventHandler acts on: messaging's other
// events (message.created, one per message stored) are acknowledged without a transaction.
func EventTypes() outbox.Option {
	return outbox.WithTypes(eventStatusChanged, eventStatusesChanged, eventReceived, eventLinkClicked)
}

// IdempotentTypes names the events EventHandler and EventBatch apply idempotently (outbox's
// WithIdempotent): a status report moves its recipient only forward, under the recipient's
// lock, and the counters and completion move only with it, so a redelivered one changes
// nothing. Replies and clicks add to counters and keep their processed_events rows.
func IdempotentTypes() outbox.Option {
	return outbox.WithIdempotent(eventStatusChanged, eventStatusesChanged)
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
