package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/tenant"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// AddNumber gives an organization a sending number (operator RPC). Adding a number the
// organization has again changes nothing but, with is_default, which number is the default,
// and, with messages_per_second, its rate.
func (s *Server) AddNumber(ctx context.Context, req *messagingv1.AddNumberRequest) (*messagingv1.AddNumberResponse, error) {
	f := apierr.Fields{}
	org, err := uuid.Parse(req.GetOrganizationId())
	if err != nil {
		f.Add("organizationId", "must be a UUID")
	}
	number, err := phone.Normalize(req.GetNumber())
	if err != nil {
		f.Add("number", "must be a phone number")
	}
	if mps := req.GetMessagesPerSecond(); mps < 0 || mps > maxNumberRate {
		f.Add("messagesPerSecond", fmt.Sprintf("must be between 1 and %d (0 keeps the number's rate)", maxNumberRate))
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	if _, err := s.cfg.Orgs.Organization(ctx, org); err != nil {
		if errors.Is(err, clients.ErrNotFound) {
			return nil, apierr.NotFound("organization not found")
		}
		return nil, err
	}
	n, err := s.cfg.Store.AddNumber(ctx, org, number, req.GetIsDefault())
	if errors.Is(err, store.ErrNumberTaken) {
		return nil, apierr.Conflict("the number belongs to another organization")
	}
	if err != nil {
		return nil, err
	}
	if mps := int(req.GetMessagesPerSecond()); mps > 0 {
		if err := s.cfg.Store.SetNumberRate(ctx, org, n.ID, mps); err != nil {
			return nil, err
		}
		n.MPS = mps
	}
	return &messagingv1.AddNumberResponse{PhoneNumberId: n.ID.String(), Number: n.Number, IsDefault: n.IsDefault,
		MessagesPerSecond: int32(s.cfg.Dispatch.RateOf(n.MPS))}, nil
}

// maxNumberRate bounds a number's rate: well above any carrier's per-number limit.
const maxNumberRate = 10000

// GetPhoneNumber returns one of the organization's sending numbers, or with no id its default:
// campaigns show a campaign's sending number and check a fromPhoneNumberId with it. Another
// organization's number is NOT_FOUND, exactly as a missing one.
func (s *Server) GetPhoneNumber(ctx context.Context, req *messagingv1.GetPhoneNumberRequest) (*messagingv1.GetPhoneNumberResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	var n store.Number
	if raw := req.GetPhoneNumberId(); raw != "" {
		id, perr := uuid.Parse(raw)
		if perr != nil {
			return nil, apierr.Field("phoneNumberId", "must be a UUID")
		}
		n, err = s.cfg.Store.Number(ctx, org, id)
	} else {
		n, err = s.cfg.Store.DefaultNumber(ctx, org)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("phone number not found")
	}
	if err != nil {
		return nil, err
	}
	return &messagingv1.GetPhoneNumberResponse{PhoneNumberId: n.ID.String(), Number: n.Number, IsDefault: n.IsDefault,
		MessagesPerSecond: int32(s.cfg.Dispatch.RateOf(n.MPS))}, nil
}
