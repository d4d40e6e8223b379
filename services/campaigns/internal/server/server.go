// Package server implements chorus.campaigns.v1.CampaignsService: validation, tenancy, the
// campaign state moves, and the mapping of store results to API errors.
package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/clients/messaging"
	"github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/nullable"
	"github.com/chorus-sms/chorus/pkg/quiethours"
	"github.com/chorus-sms/chorus/pkg/resource"
	"github.com/chorus-sms/chorus/pkg/tenant"
	campaignsv1 "github.com/chorus-sms/chorus/proto/gen/go/campaigns/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/fanout"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

// Jobs queues a campaign's background work inside the transaction that moves its state.
type Jobs interface {
	// StartTx runs the campaign's send (audience, hold, queueing) at at.
	StartTx(ctx context.Context, tx pgx.Tx, c *store.Campaign, at time.Time) error
	// FinishTx settles a campaign that ended early (canceled): the rest of its hold is
	// released (messaging withdrew its queued messages before the cancel was saved).
	FinishTx(ctx context.Context, tx pgx.Tx, c *store.Campaign) error
}

// Config holds what the server needs.
type Config struct {
	Store     *store.Store
	Orgs      *orgs.Client
	Contacts  *contacts.Client
	Messaging *messaging.Client
	Jobs      Jobs
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// campaign is the kind of record the server answers for.
var campaign = resource.Kind{Name: "campaign", Reason: apierr.ReasonNotFound, Missing: store.ErrNotFound}

// Server answers the CampaignsService RPCs.
type Server struct {
	campaignsv1.UnimplementedCampaignsServiceServer
	cfg   Config
	moves resource.Moves[store.Campaign]
	zones zoneCounts // the completion estimate's counts, kept briefly
}

// New returns a Server.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg}
	s.moves = resource.Moves[store.Campaign]{Kind: campaign, InTx: cfg.Store.InTx, Lock: cfg.Store.Lock, State: sourceState, Tell: s.tellMessaging}
	return s
}

// ListCampaigns lists the organization's campaigns, newest first, with their counters as kept.
func (s *Server) ListCampaigns(ctx context.Context, _ *campaignsv1.ListCampaignsRequest) (*campaignsv1.ListCampaignsResponse, error) {
	out, err := resource.List(ctx, s.cfg.Store.List, toListItem)
	if err != nil {
		return nil, err
	}
	return &campaignsv1.ListCampaignsResponse{Campaigns: out}, nil
}

// GetCampaign returns one campaign with its sending number and display metrics.
func (s *Server) GetCampaign(ctx context.Context, req *campaignsv1.GetCampaignRequest) (*campaignsv1.GetCampaignResponse, error) {
	c, err := resource.Get(ctx, campaign, req.GetId(), s.cfg.Store.Get)
	if err != nil {
		return nil, err
	}
	out := toCampaign(&c)
	from, waits := s.cfg.Now(), false
	if c.IsAbTest {
		t, _, err := s.cfg.Store.GetAbTest(ctx, c.OrgID, c.ID)
		if err != nil {
			return nil, err
		}
		setVariantMetrics(out.DisplayMetrics, &t)
		if t.Winner == nil && t.DecideAt != nil && t.DecideAt.After(from) {
			from, waits = *t.DecideAt, true // the rest waits for the decision
		}
	}
	var rate int32
	if out.PhoneNumber, rate, err = s.phoneNumber(ctx, &c); err != nil {
		return nil, err
	}
	if out.FromPhoneNumberId == nil && out.PhoneNumber != nil {
		// A draft saved before its organization had a number sends from today's default.
		out.FromPhoneNumberId = &out.PhoneNumber.Id
	}
	if out.PhoneNumbers, err = s.poolNumbers(ctx, &c); err != nil {
		return nil, err
	}
	if len(c.FromPhoneNumberIDs) > 1 {
		if rate, err = s.poolRate(ctx, &c, out.PhoneNumbers); err != nil {
			return nil, err
		}
	}
	if out.DisplayMetrics.EstimatedCompletionAt, err = s.estimatedCompletion(ctx, &c, rate, from, waits); err != nil {
		return nil, err
	}
	return &campaignsv1.GetCampaignResponse{Campaign: out}, nil
}

// poolRate is the messages per second c's number pool sends at: the sum of its numbers' rates,
// but for those the carrier's refusals took out of the rotation (used).
func (s *Server) poolRate(ctx context.Context, c *store.Campaign, used []*campaignsv1.PoolNumber) (int32, error) {
	ids := make([]string, len(c.FromPhoneNumberIDs))
	for i, id := range c.FromPhoneNumberIDs {
		ids[i] = id.String()
	}
	numbers, err := s.cfg.Messaging.FindPhoneNumbers(ctx, c.OrgID, ids)
	if err != nil {
		return 0, fmt.Errorf("pool's numbers: %w", err)
	}
	removed := map[string]bool{}
	for _, n := range used {
		removed[n.GetId()] = n.GetRemoved()
	}
	var rate int32
	for _, n := range numbers {
		if !removed[n.GetPhoneNumberId()] {
			rate += n.GetMessagesPerSecond()
		}
	}
	return rate, nil
}

// poolNumbers are the numbers messaging gave c's messages, with what each sent and whether the
// carrier's refusals took it out of the rotation; none before the audience is handed over.
func (s *Server) poolNumbers(ctx context.Context, c *store.Campaign) ([]*campaignsv1.PoolNumber, error) {
	if c.Status == store.StatusDraft || c.Status == store.StatusScheduled {
		return []*campaignsv1.PoolNumber{}, nil
	}
	numbers, err := s.cfg.Messaging.BulkNumbers(ctx, c.OrgID, fanout.SourceKind, c.ID.String())
	if err != nil {
		return nil, fmt.Errorf("campaign's numbers: %w", err)
	}
	out := make([]*campaignsv1.PoolNumber, len(numbers))
	for i, n := range numbers {
		out[i] = &campaignsv1.PoolNumber{Id: n.GetPhoneNumberId(), Number: n.GetNumber(), SentCount: n.GetSentCount(),
			Removed: n.GetRemoved(), RemovedReason: n.GetRemovedReason()}
	}
	return out, nil
}

// estimatedCompletion is when c's queued messages will all have gone out at rate (its
// numbers' messages per second, summed) from `from` (now, or, when waits, an undecided A/B
// test's decision), each inside its quiet-hours windows (the campaign's zone, else the
// organization's; the recipient's own zone; its state's law unless the organization turned
// state rules off), from one grouped count of the queued recipients per zone and state (kept
// for zoneCountsTTL, the estimate then running from when it was taken): completedAt once
// completed, nil when it cannot be known (not running, paused, audience not resolved, no
// number).
func (s *Server) estimatedCompletion(ctx context.Context, c *store.Campaign, rate int32, from time.Time, waits bool) (*timestamppb.Timestamp, error) {
	switch {
	case c.Status == store.StatusCompleted:
		return nullable.Time(c.CompletedAt), nil
	case c.Status != store.StatusPending && c.Status != store.StatusQueued && c.Status != store.StatusSending,
		!c.AudienceResolved, rate <= 0:
		return nil, nil
	}
	o, err := s.cfg.Orgs.Organization(ctx, c.OrgID)
	if err != nil {
		return nil, fmt.Errorf("organization: %w", err)
	}
	zone := o.GetTimezone()
	if c.Timezone != nil {
		zone = *c.Timezone
	}
	groups, at, ok := s.zones.get(c, s.cfg.Now())
	if !ok {
		began := s.cfg.Now()
		var err error
		if groups, err = s.cfg.Store.QueuedByZone(ctx, c.OrgID, c.ID); err != nil {
			return nil, err
		}
		at = s.cfg.Now()
		s.zones.put(c, groups, at, at.Sub(began))
	}
	if !waits {
		from = at
	}
	queues := make([]quiethours.Queue, len(groups))
	for i, g := range groups {
		m := quiethours.Message{Zone: zone, RecipientZone: g.Timezone}
		if !o.GetStateQuietHoursOff() {
			m.State = quiethours.RecipientState(g.State, g.Phone)
		}
		queues[i] = quiethours.Queue{Message: m, Count: g.Count}
	}
	return timestamppb.New(quiethours.Estimate(from, float64(rate), queues)), nil
}

// phoneNumber is the number c sends from: the one it names, else the organization's default;
// nil when there is none (a draft of an organization without numbers); and its rate.
func (s *Server) phoneNumber(ctx context.Context, c *store.Campaign) (_ *campaignsv1.PhoneNumber, rate int32, _ error) {
	id := ""
	if c.FromPhoneNumberID != nil {
		id = c.FromPhoneNumberID.String()
	}
	n, err := s.cfg.Messaging.PhoneNumber(ctx, c.OrgID, id)
	if errors.Is(err, clients.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sending number: %w", err)
	}
	return &campaignsv1.PhoneNumber{Id: n.GetPhoneNumberId(), Number: n.GetNumber(), IsDefault: n.GetIsDefault()}, n.GetMessagesPerSecond(), nil
}

// defaultNumber is the id of org's default sending number, nil when it has none: a campaign
// that names no number is given it when created (a draft too), so that its fromPhoneNumberId
// is always the UUID the spec types it.
func (s *Server) defaultNumber(ctx context.Context, org uuid.UUID) (*uuid.UUID, error) {
	n, err := s.cfg.Messaging.PhoneNumber(ctx, org, "")
	if errors.Is(err, clients.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("default number: %w", err)
	}
	id, err := uuid.Parse(n.GetPhoneNumberId())
	if err != nil {
		return nil, fmt.Errorf("default number id %q: %w", n.GetPhoneNumberId(), err)
	}
	return &id, nil
}

// CreateDraft saves a draft: every field optional but name.
func (s *Server) CreateDraft(ctx context.Context, req *campaignsv1.CreateDraftRequest) (*campaignsv1.CreateDraftResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	c := newCampaign(org, s.cfg.Now())
	f := apierr.Fields{}
	in := input(req.GetCampaign())
	if in.DraftId != nil {
		f.Add("draftId", "is only accepted by POST /api/campaigns")
	}
	if in.Name == nil {
		f.Add("name", "is required")
	}
	apply(&c, in, f)
	if err := f.Err(); err != nil {
		return nil, err
	}
	if err := s.checkReferences(ctx, &c); err != nil {
		return nil, err
	}
	if c.FromPhoneNumberID == nil {
		if c.FromPhoneNumberID, err = s.defaultNumber(ctx, org); err != nil {
			return nil, err
		}
	}
	if err := s.cfg.Store.InTx(ctx, func(tx pgx.Tx) error { return s.cfg.Store.Insert(ctx, tx, &c) }); err != nil {
		return nil, err
	}
	httpcode.Set(ctx, 201)
	return &campaignsv1.CreateDraftResponse{Campaign: toCampaign(&c)}, nil
}

// UpdateDraft changes the sent fields of a draft and answers 200 with the whole draft. A
// campaign that is not a draft is 400 INVALID_STATE (the spec's 400), changing nothing.
func (s *Server) UpdateDraft(ctx context.Context, req *campaignsv1.UpdateDraftRequest) (*campaignsv1.UpdateDraftResponse, error) {
	org, id, err := campaign.Target(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	in := input(req.GetCampaign())
	f := apierr.Fields{}
	if in.DraftId != nil {
		f.Add("draftId", "is only accepted by POST /api/campaigns")
	}
	probe := store.Campaign{OrgID: org}
	apply(&probe, in, f) // the fields' own formats, before anything is read
	if err := f.Err(); err != nil {
		return nil, err
	}
	if err := s.checkReferences(ctx, &probe); err != nil {
		return nil, err
	}
	byDefault, err := s.defaultNumber(ctx, org)
	if err != nil {
		return nil, err
	}
	var c store.Campaign
	err = s.cfg.Store.InTx(ctx, func(tx pgx.Tx) error {
		if c, err = s.cfg.Store.Lock(ctx, tx, org, id); err != nil {
			return err
		}
		if c.Status != store.StatusDraft {
			return notDraft(c.Status)
		}
		apply(&c, in, apierr.Fields{})
		if c.FromPhoneNumberID == nil {
			c.FromPhoneNumberID = byDefault
		}
		return s.cfg.Store.Save(ctx, tx, &c)
	})
	if err != nil {
		return nil, campaign.StoreError(err)
	}
	return &campaignsv1.UpdateDraftResponse{Campaign: toCampaign(&c)}, nil
}

// CreateCampaign creates a campaign, or promotes the draft draftId in place, and submits it:
// scheduled when scheduledFor is in the future, else pending at once (refused with
// QUIET_HOURS outside 08:00-21:00 in its timezone, else the organization's).
func (s *Server) CreateCampaign(ctx context.Context, req *campaignsv1.CreateCampaignRequest) (*campaignsv1.CreateCampaignResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	in := input(req.GetCampaign())
	f := apierr.Fields{}
	draftID := optionalID(f, "draftId", in.GetDraftId())
	now := s.cfg.Now()
	c := newCampaign(org, now)
	var draftSeen time.Time
	if draftID != nil {
		d, err := s.cfg.Store.Get(ctx, org, *draftID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, apierr.Field("draftId", "no such draft")
		}
		if err != nil {
			return nil, err
		}
		if d.Status != store.StatusDraft {
			return nil, submittedNotDraft(d.Status)
		}
		c, draftSeen = d, d.UpdatedAt
	}
	apply(&c, in, f)
	complete(&c, f)
	if err := f.Err(); err != nil {
		return nil, err
	}
	if err := s.checkReferences(ctx, &c); err != nil {
		return nil, err
	}
	if c.FromPhoneNumberID == nil { // the default, fixed when the campaign is submitted
		if c.FromPhoneNumberID, err = s.defaultNumber(ctx, org); err != nil {
			return nil, err
		}
		if c.FromPhoneNumberID == nil {
			return nil, apierr.New(codes.InvalidArgument, apierr.ReasonNoFromNumber, "the organization has no default phone number; name fromPhoneNumberId")
		}
	}
	start := now
	if c.ScheduledFor != nil && c.ScheduledFor.After(now) {
		c.Status, start = store.StatusScheduled, *c.ScheduledFor
	} else {
		if err := s.checkQuietHours(ctx, &c, now); err != nil {
			return nil, err
		}
		c.Status, c.StartedAt = store.StatusPending, &now
	}
	c.Submission++
	err = s.cfg.Store.InTx(ctx, func(tx pgx.Tx) error {
		if draftID == nil {
			if err := s.cfg.Store.Insert(ctx, tx, &c); err != nil {
				return err
			}
		} else {
			cur, err := s.cfg.Store.Lock(ctx, tx, org, *draftID)
			if err != nil {
				return err
			}
			if cur.Status != store.StatusDraft {
				return submittedNotDraft(cur.Status)
			}
			if !cur.UpdatedAt.Equal(draftSeen) {
				return apierr.Conflict("the draft changed while it was being submitted; submit again")
			}
			if err := s.cfg.Store.Save(ctx, tx, &c); err != nil {
				return err
			}
		}
		return s.cfg.Jobs.StartTx(ctx, tx, &c, start)
	})
	if err != nil {
		return nil, campaign.StoreError(err)
	}
	httpcode.Set(ctx, 201)
	return &campaignsv1.CreateCampaignResponse{Campaign: toCampaign(&c)}, nil
}

// checkQuietHours refuses an immediate send outside the window of the campaign's timezone,
// else the organization's, naming when the window next opens.
func (s *Server) checkQuietHours(ctx context.Context, c *store.Campaign, now time.Time) error {
	tz := ""
	if c.Timezone != nil {
		tz = *c.Timezone
	} else {
		o, err := s.cfg.Orgs.Organization(ctx, c.OrgID)
		if err != nil {
			return fmt.Errorf("organization timezone: %w", err)
		}
		tz = o.GetTimezone()
	}
	return quiethours.Refuse("campaigns", tz, now)
}

// checkReferences checks that the segment and sending number c names belong to the
// organization: another organization's behaves exactly as a missing one (400 naming the field).
func (s *Server) checkReferences(ctx context.Context, c *store.Campaign) error {
	f := apierr.Fields{}
	if c.SegmentID != nil {
		_, err := s.cfg.Contacts.Segment(ctx, c.OrgID, c.SegmentID.String())
		switch {
		case errors.Is(err, clients.ErrNotFound):
			f.Add("segmentId", "no such segment")
		case err != nil:
			return fmt.Errorf("segment: %w", err)
		}
	}
	if len(c.FromPhoneNumberIDs) > 0 {
		if err := s.cfg.Messaging.CheckPool(ctx, c.OrgID, "fromPhoneNumberIds", c.FromPhoneNumberIDs, f); err != nil {
			return err
		}
	} else if c.FromPhoneNumberID != nil {
		_, err := s.cfg.Messaging.PhoneNumber(ctx, c.OrgID, c.FromPhoneNumberID.String())
		switch {
		case errors.Is(err, clients.ErrNotFound):
			f.Add("fromPhoneNumberId", "no such phone number in the organization")
		case err != nil:
			return fmt.Errorf("sending number: %w", err)
		}
	}
	return f.Err()
}

// PauseCampaign: pending, queued or sending → paused. Messaging holds the campaign's queued
// messages before the answer, so nothing more is handed to the carrier once it is given.
func (s *Server) PauseCampaign(ctx context.Context, req *campaignsv1.PauseCampaignRequest) (*campaignsv1.PauseCampaignResponse, error) {
	c, err := s.move(ctx, req.GetId(), stateMove{
		check: func(c *store.Campaign) error {
			switch c.Status {
			case store.StatusPending, store.StatusQueued, store.StatusSending:
				return nil
			}
			return campaign.InvalidMove("pause", c.Status)
		},
		apply: func(_ pgx.Tx, c *store.Campaign) error {
			from := c.Status
			c.PausedFrom, c.Status = &from, store.StatusPaused
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return &campaignsv1.PauseCampaignResponse{Campaign: c}, nil
}

// ResumeCampaign: paused → the status it was paused in; the send continues where it was and
// messaging releases the queued messages.
func (s *Server) ResumeCampaign(ctx context.Context, req *campaignsv1.ResumeCampaignRequest) (*campaignsv1.ResumeCampaignResponse, error) {
	c, err := s.move(ctx, req.GetId(), stateMove{
		check: func(c *store.Campaign) error {
			if c.Status != store.StatusPaused || c.PausedFrom == nil {
				return campaign.InvalidMove("resume", c.Status)
			}
			return nil
		},
		apply: func(tx pgx.Tx, c *store.Campaign) error {
			c.Status, c.PausedFrom = *c.PausedFrom, nil
			return s.cfg.Jobs.StartTx(ctx, tx, c, s.cfg.Now())
		},
	})
	if err != nil {
		return nil, err
	}
	return &campaignsv1.ResumeCampaignResponse{Campaign: c}, nil
}

// CancelCampaign: scheduled → draft; pending, queued, sending or paused → completed with
// canceledAt: messaging withdraws its queued messages (never sent, not counted as failed)
// before the answer, and the hold's rest is released.
func (s *Server) CancelCampaign(ctx context.Context, req *campaignsv1.CancelCampaignRequest) (*campaignsv1.CancelCampaignResponse, error) {
	c, err := s.move(ctx, req.GetId(), stateMove{
		check: func(c *store.Campaign) error {
			switch c.Status {
			case store.StatusScheduled, store.StatusPending, store.StatusQueued, store.StatusSending, store.StatusPaused:
				return nil
			}
			return campaign.InvalidMove("cancel", c.Status)
		},
		apply: func(tx pgx.Tx, c *store.Campaign) error {
			if c.Status == store.StatusScheduled {
				c.Status = store.StatusDraft
				return nil
			}
			now := s.cfg.Now()
			c.Status, c.PausedFrom, c.CanceledAt, c.CompletedAt = store.StatusCompleted, nil, &now, &now
			return s.cfg.Jobs.FinishTx(ctx, tx, c)
		},
	})
	if err != nil {
		return nil, err
	}
	return &campaignsv1.CancelCampaignResponse{Campaign: c}, nil
}

// stateMove is one campaign state move: check says whether the campaign's status allows it;
// apply changes the locked campaign inside the transaction that saves it.
type stateMove struct {
	check func(*store.Campaign) error
	apply func(pgx.Tx, *store.Campaign) error
}

// move applies mv and saves the campaign as s.moves does: messaging is told the state of the
// campaign's queued messages that the moved status implies (sourceState).
func (s *Server) move(ctx context.Context, rawID string, mv stateMove) (*campaignsv1.Campaign, error) {
	c, err := s.moves.Move(ctx, rawID, func(tx pgx.Tx, c *store.Campaign) error {
		if err := mv.check(c); err != nil {
			return err
		}
		if err := mv.apply(tx, c); err != nil {
			return err
		}
		return s.cfg.Store.Save(ctx, tx, c)
	})
	if err != nil {
		return nil, err
	}
	return toCampaign(&c), nil
}

// tellMessaging sets the state of the campaign's queued messages in messaging, and the same
// state for its queued auto-replies: a paused campaign sends nothing, its answers included
// (held until resume), and a canceled one's answers are withdrawn. A pending campaign's state
// (held) opens the bulk hand-off of its audience, which the fan-out releases once the hold is
// placed; its answers, which have no hand-off, wait as paused.
func (s *Server) tellMessaging(ctx context.Context, org, id uuid.UUID, state string) error {
	for _, kind := range []string{fanout.SourceKind, fanout.AutoReplySourceKind} {
		var err error
		switch {
		case state == messaging.SourceHeld && kind == fanout.SourceKind:
			err = s.cfg.Messaging.OpenBulk(ctx, org, kind, id.String())
		case state == messaging.SourceHeld:
			err = s.cfg.Messaging.SetSourceState(ctx, org, kind, id.String(), messaging.SourcePaused)
		default:
			err = s.cfg.Messaging.SetSourceState(ctx, org, kind, id.String(), state)
		}
		if err != nil {
			return fmt.Errorf("messaging source state of %s %s: %w", kind, id, err)
		}
	}
	return nil
}

// sourceState is the state messaging keeps the queued messages of a campaign in c's status:
// held while pending (its audience is handed over as it is resolved, before its hold is
// placed: the fan-out lets it go then), held back while paused, withdrawn for good once
// canceled, sent otherwise.
func sourceState(c *store.Campaign) string {
	switch {
	case c.Status == store.StatusPending:
		return messaging.SourceHeld
	case c.Status == store.StatusPaused:
		return messaging.SourcePaused
	case c.CanceledAt != nil:
		return messaging.SourceCanceled
	}
	return messaging.SourceActive
}

// submittedNotDraft is a draftId whose campaign is no longer a draft: 409, as docs/api-notes.md and
// the overlay declare for POST /api/campaigns, whether seen before or under the lock.
func submittedNotDraft(status string) error {
	return apierr.New(codes.Aborted, apierr.ReasonInvalidState, "draftId names a campaign that is "+status+", not a draft")
}

func notDraft(status string) error {
	return apierr.New(codes.InvalidArgument, apierr.ReasonInvalidState, "the campaign is "+status+"; only a draft can be edited")
}
