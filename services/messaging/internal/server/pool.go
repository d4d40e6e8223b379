package server

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/numberpool"
	"github.com/chorus-sms/chorus/pkg/tenant"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/senders"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// FindPhoneNumbers returns the organization's numbers among those named; another
// organization's is left out, as a missing one.
func (s *Server) FindPhoneNumbers(ctx context.Context, req *messagingv1.FindPhoneNumbersRequest) (*messagingv1.FindPhoneNumbersResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	f := apierr.Fields{}
	ids := numberpool.ParseIDs(f, "phoneNumberIds", req.GetPhoneNumberIds())
	if err := f.Err(); err != nil {
		return nil, err
	}
	found, err := s.cfg.Store.Numbers(ctx, org, ids)
	if err != nil {
		return nil, err
	}
	out := &messagingv1.FindPhoneNumbersResponse{Numbers: make([]*messagingv1.GetPhoneNumberResponse, len(found))}
	for i, n := range found {
		out.Numbers[i] = &messagingv1.GetPhoneNumberResponse{PhoneNumberId: n.ID.String(), Number: n.Number, IsDefault: n.IsDefault,
			MessagesPerSecond: int32(s.cfg.Dispatch.RateOf(n.MPS))}
	}
	return out, nil
}

// GetBulkNumbers lists a source's numbers with what each sent and whether it left the
// rotation.
func (s *Server) GetBulkNumbers(ctx context.Context, req *messagingv1.GetBulkNumbersRequest) (*messagingv1.GetBulkNumbersResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	src := req.GetSource()
	numbers, err := s.cfg.Store.SourceNumbers(ctx, org, src.GetSourceKind(), src.GetSourceId())
	if err != nil {
		return nil, err
	}
	out := &messagingv1.GetBulkNumbersResponse{Numbers: make([]*messagingv1.BulkNumber, len(numbers))}
	for i, n := range numbers {
		out.Numbers[i] = &messagingv1.BulkNumber{PhoneNumberId: n.PhoneNumberID.String(), Number: n.Number, SentCount: int32(n.Sent),
			Removed: n.Removed, RemovedReason: n.RemovedReason}
	}
	return out, nil
}

// PickSenders gives each recipient of a source that sends message by message (a poll) its
// number from the pool, as assignPool gives a bulk batch's, and counts them to the source's
// numbers so the next call balances against them.
func (s *Server) PickSenders(ctx context.Context, req *messagingv1.PickSendersRequest) (*messagingv1.PickSendersResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	f := apierr.Fields{}
	src := req.GetSource()
	checkSource(f, src)
	phones := req.GetPhones()
	if n := len(phones); n == 0 || n > maxQueued {
		f.Add("phones", fmt.Sprintf("must hold 1 to %d phones", maxQueued))
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	msgs := make([]*store.Message, len(phones))
	for i, p := range phones {
		// A source picks a recipient's number once: the phone keys the pick, so that a retry
		// is counted once (CountAssigned).
		msgs[i] = &store.Message{OrgID: org, ContactPhone: p, SourceKind: src.GetSourceKind(), SourceID: src.GetSourceId(),
			DedupeKey: "pick:" + p}
	}
	if err := s.assignPool(ctx, org, req.GetFromPhoneNumberIds(), msgs); err != nil {
		return nil, err
	}
	if err := s.cfg.Store.CountAssigned(ctx, msgs); err != nil {
		return nil, err
	}
	out := &messagingv1.PickSendersResponse{PhoneNumberIds: make([]string, len(msgs))}
	for i, m := range msgs {
		out.PhoneNumberIds[i] = m.PhoneNumberID.String()
	}
	return out, nil
}

// assignPool gives each message of a bulk batch (validated by outgoing, with the default
// number) its sending number from the pool ids (its
// numbers still in the source's rotation; all of them when none is): with one number no
// query is made, with more the recipients' last senders are read, one index probe each
// (senders.Pick).
func (s *Server) assignPool(ctx context.Context, org uuid.UUID, raw []string, msgs []*store.Message) error {
	f := apierr.Fields{}
	ids := numberpool.ParseIDs(f, "fromPhoneNumberIds", raw)
	if err := f.Err(); err != nil {
		return err
	}
	found, err := s.cfg.Store.Numbers(ctx, org, ids)
	if err != nil {
		return err
	}
	byID := make(map[uuid.UUID]store.Number, len(found))
	for _, n := range found {
		byID[n.ID] = n
	}
	for i, id := range ids {
		if _, ok := byID[id]; !ok {
			return apierr.Field(fmt.Sprintf("fromPhoneNumberIds[%d]", i), "no such phone number in the organization")
		}
	}
	first := msgs[0]
	known, err := s.cfg.Store.SourceNumbers(ctx, org, first.SourceKind, first.SourceID)
	if err != nil {
		return err
	}
	seen := make(map[string]store.SourceNumber, len(known))
	for _, k := range known {
		seen[k.Number] = k
	}
	var rotation []store.Number
	var loads []senders.Number
	for _, id := range ids {
		n := byID[id]
		if k := seen[n.Number]; !k.Removed {
			rotation = append(rotation, n)
			loads = append(loads, senders.Number{Number: n.Number, Load: k.Assigned})
		}
	}
	if len(rotation) == 0 { // every number refused: they fail at the carrier, as one number's would
		for _, id := range ids {
			rotation = append(rotation, byID[id])
			loads = append(loads, senders.Number{Number: byID[id].Number})
		}
	}
	give := func(m *store.Message, n store.Number) {
		m.OurNumber, m.PhoneNumberID = n.Number, &n.ID
	}
	if len(rotation) == 1 {
		for _, m := range msgs {
			give(m, rotation[0])
		}
		return nil
	}
	pool, phones := make([]string, len(rotation)), make([]string, len(msgs))
	for i, n := range rotation {
		pool[i] = n.Number
	}
	for i, m := range msgs {
		phones[i] = m.ContactPhone
	}
	last, err := s.cfg.Store.LastSenders(ctx, org, pool, phones)
	if err != nil {
		return err
	}
	for i, pick := range senders.Pick(loads, phones, last) {
		give(msgs[i], rotation[pick])
	}
	return nil
}
