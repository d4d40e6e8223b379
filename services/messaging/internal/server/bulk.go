package server

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/quiethours"
	"github.com/chorus-sms/chorus/pkg/tenant"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// The bulk hand-off of a campaign's or poll's audience: OpenBulk holds the source's batches
// back, QueueBulk stores them (one row each, whose messages dispatch's bulk.go creates when
// due), and ReleaseBulk lets them go or CancelBulk drops them. Each call is idempotent: a
// retried batch creates no message twice (dedupe keys), and the states are set, not toggled.

// OpenBulk holds the source's bulk batches (and messages) back until ReleaseBulk: a campaign
// hands its audience over while it is resolved, before its credits are held.
func (s *Server) OpenBulk(ctx context.Context, req *messagingv1.OpenBulkRequest) (*messagingv1.OpenBulkResponse, error) {
	if err := s.bulkState(ctx, req.GetSource(), store.SourceHeld); err != nil {
		return nil, err
	}
	return &messagingv1.OpenBulkResponse{}, nil
}

// QueueBulk validates a batch as SendMessages does its messages, each of them alike in what
// the batch's row holds once (store.BulkAlike), gives each message its number from the
// request's number pool when it has one (assignPool), and stores it as one row per number.
func (s *Server) QueueBulk(ctx context.Context, req *messagingv1.QueueBulkRequest) (*messagingv1.QueueBulkResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	pool := req.GetFromPhoneNumberIds()
	for i, m := range req.GetMessages() {
		if len(pool) > 0 && m.GetFromPhoneNumberId() != "" {
			return nil, apierr.Field(fmt.Sprintf("messages[%d].fromPhoneNumberId", i), "must be empty when fromPhoneNumberIds is given")
		}
	}
	out, err := s.outgoing(ctx, org, req.GetMessages(), true)
	if err != nil {
		return nil, err
	}
	for i, m := range out.msgs {
		if field := store.BulkAlike(out.msgs[0], m); field != "" {
			return nil, apierr.Field(fmt.Sprintf("messages[%d].%s", i, field), "must be the same as the first message's in a bulk batch")
		}
	}
	if len(pool) > 0 {
		if err := s.assignPool(ctx, org, pool, out.msgs); err != nil {
			return nil, err
		}
	}
	if err := s.queueBulk(ctx, out.msgs, out.now); err != nil {
		return nil, err
	}
	return &messagingv1.QueueBulkResponse{}, nil
}

// ReleaseBulk lets the source's batches and messages go (active), unless it was canceled.
func (s *Server) ReleaseBulk(ctx context.Context, req *messagingv1.ReleaseBulkRequest) (*messagingv1.ReleaseBulkResponse, error) {
	if err := s.bulkState(ctx, req.GetSource(), store.SourceActive); err != nil {
		return nil, err
	}
	return &messagingv1.ReleaseBulkResponse{}, nil
}

// CancelBulk drops the source's batches and withdraws its queued messages before it answers.
func (s *Server) CancelBulk(ctx context.Context, req *messagingv1.CancelBulkRequest) (*messagingv1.CancelBulkResponse, error) {
	if err := s.bulkState(ctx, req.GetSource(), store.SourceCanceled); err != nil {
		return nil, err
	}
	return &messagingv1.CancelBulkResponse{}, nil
}

// bulkState validates a bulk source and sets its state.
func (s *Server) bulkState(ctx context.Context, src *messagingv1.BulkSource, state string) error {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return err
	}
	f := apierr.Fields{}
	checkSource(f, src)
	if err := f.Err(); err != nil {
		return err
	}
	return s.setSourceState(ctx, org, src.GetSourceKind(), src.GetSourceId(), state)
}

// checkSource adds to f what is wrong with a bulk source's name.
func checkSource(f apierr.Fields, src *messagingv1.BulkSource) {
	if k := src.GetSourceKind(); k != store.SourceCampaign && k != store.SourcePoll {
		f.Add("source.sourceKind", "must be campaign or poll")
	}
	if src.GetSourceId() == "" {
		f.Add("source.sourceId", "must not be empty")
	}
}

// queueBulk stores a bulk batch, due when the first of its messages may go, and wakes the
// expander when that is now.
func (s *Server) queueBulk(ctx context.Context, batch []*store.Message, now time.Time) error {
	due := time.Time{}
	// A batch's messages share a handful of zones and states: each one's window is worked out
	// once (it was a quarter of the call's CPU when worked out per message).
	waits := map[quiethours.Message]time.Duration{}
	for _, m := range batch {
		q := quiethours.Message{Zone: m.QuietTimezone, RecipientZone: m.RecipientTimezone, State: m.RecipientState}
		wait, ok := waits[q]
		if !ok {
			wait = q.Wait(now)
			waits[q] = wait
		}
		at := now.Add(wait)
		if due.IsZero() || at.Before(due) {
			due = at
		}
	}
	if err := s.cfg.Store.InsertBulk(ctx, batch, due); err != nil {
		return err
	}
	if !due.After(now) {
		s.cfg.Dispatch.WakeExpander()
	}
	return nil
}
