// Package ingest applies messaging's and campaigns' events to analytics' rollups, each in the
// consumer's transaction that records the event as processed. Every rollup is derived from a
// stored fact (a message's latest status and bucket, a campaign's latest snapshot), so a
// redelivered, replayed or out-of-order event moves exactly the difference it makes, which is
// nothing when it was already applied.
package ingest

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/outbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
)

// The events analytics follows (types as their producers' outboxes name them).
const (
	eventMessagesCreated = "messages.created"
	eventMessageCreated  = "message.created" // one message's, as published before messages.created
	eventStatusChanged   = "message.status_changed"
	eventStatusesChanged = "messages.status_changed" // many messages' changes, one statement's
	eventMessageReceived = "message.received"
	eventLinkClicked     = "link.clicked"
	eventCampaignChanged = "campaign.changed"
)

// Zones answers an organization's timezone (orgzone.Zones).
type Zones interface {
	Of(ctx context.Context, org uuid.UUID) (*time.Location, error)
}

// Ingester applies events to the rollups.
type Ingester struct{ zones Zones }

// New returns an Ingester bucketing in the zones z answers.
func New(z Zones) *Ingester { return &Ingester{zones: z} }

// MessagingHandler applies one of messaging's events: outgoing messages from their creation
// and status reports, inbound messages, and short-link follows. It is MessagingBatch of one.
func (in *Ingester) MessagingHandler() outbox.Handler {
	return func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		return in.applyMessaging(ctx, tx, []outbox.Message{m})
	}
}

// MessagingBatch applies a read's worth of messaging's events together (outbox's
// WithBatchHandler): every fact they touch locked in one statement, then the facts, the count
// changes and the clicks written in one statement each, whatever the number of events.
func (in *Ingester) MessagingBatch() outbox.BatchHandler { return in.applyMessaging }

// MessagingIdempotent names the messaging events MessagingBatch applies idempotently (outbox's
// WithIdempotent): a message's creation and status reports merge into its fact (least times,
// highest status) under the fact's lock, and counts move only when the fact does, so a
// redelivered one changes nothing. Inbound messages and clicks add to counters and keep their
// processed_events rows.
func MessagingIdempotent() outbox.Option {
	return outbox.WithIdempotent(eventMessagesCreated, eventMessageCreated, eventStatusChanged, eventStatusesChanged)
}

// CampaignsHandler applies campaigns' campaign.changed snapshots.
func (in *Ingester) CampaignsHandler() outbox.Handler {
	return func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		if m.Type != eventCampaignChanged {
			return nil
		}
		var ev eventsv1.CampaignChanged
		if err := m.Unmarshal(&ev); err != nil {
			return err
		}
		return in.campaign(ctx, tx, m.OrgID, &ev)
	}
}

// local is t's day and hour in org's zone.
func (in *Ingester) local(ctx context.Context, org uuid.UUID, t time.Time) (day time.Time, hour int, err error) {
	loc, err := in.zones.Of(ctx, org)
	if err != nil {
		return time.Time{}, 0, err
	}
	lt := t.In(loc)
	return time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, time.UTC), lt.Hour(), nil
}
