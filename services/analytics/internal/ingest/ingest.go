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

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/outbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/analytics/internal/linkpreview"
)

// The events analytics follows (types as their producers' outboxes name them).
const (
	eventMessageCreated  = "message.created"
	eventStatusChanged   = "message.status_changed"
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

// MessagingHandler applies messaging's events: outgoing messages from their creation and
// status reports, inbound messages, and short-link follows.
func (in *Ingester) MessagingHandler() outbox.Handler {
	return func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
		switch m.Type {
		case eventMessageCreated:
			var ev eventsv1.MessageCreated
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			return in.message(ctx, tx, m.OrgID, ev.GetMessageId(), report{
				kind: ev.GetSourceKind(), source: ev.GetSourceId(), status: ev.GetStatus(), created: ev.GetCreatedAt().AsTime(),
			})
		case eventStatusChanged:
			var ev eventsv1.MessageStatusChanged
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			return in.message(ctx, tx, m.OrgID, ev.GetMessageId(), report{
				kind: ev.GetSourceKind(), source: ev.GetSourceId(), status: ev.GetStatus(), left: ev.GetOccurredAt().AsTime(),
				withdrawn: ev.GetStatus() == statusFailed && apierr.Withdrawn(ev.GetErrorCode()),
			})
		case eventMessageReceived:
			var ev eventsv1.MessageReceived
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			return in.received(ctx, tx, m.OrgID, ev.GetReceivedAt().AsTime())
		case eventLinkClicked:
			var ev eventsv1.LinkClicked
			if err := m.Unmarshal(&ev); err != nil {
				return err
			}
			return in.click(ctx, tx, m.OrgID, ev.GetClickedAt().AsTime(), linkpreview.IsFetcher(ev.GetUserAgent()))
		}
		return nil
	}
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
