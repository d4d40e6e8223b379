package server

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// Bounds of the consent RPCs.
const (
	maxSendableBatch  = 1000
	maxSourceLen      = 100
	maxMessageTextLen = 64 << 10 // an inbound text is at most 1,600 characters; this bounds abuse only
)

// messageSources are the sources SetConsent records: the changes a text or the carrier makes
// (api and import changes are made by this service itself).
var messageSources = []string{store.SourceKeyword, store.SourceText, store.SourceCarrier, store.SourceSignup}

// requiredPhone normalizes the phone an internal RPC names to E.164.
func (v *validator) requiredPhone(p string) string {
	if p == "" {
		v.fields.Add("phone", "is required")
		return ""
	}
	if e164 := v.phone(&p, false); e164 != nil {
		return *e164
	}
	return ""
}

// onlyPhone validates a request whose only field is a phone.
func onlyPhone(p string) (string, error) {
	v := newValidator()
	e164 := v.requiredPhone(p)
	return e164, v.err()
}

// FindContactByPhone returns the organization's contact with a phone.
func (s *Server) FindContactByPhone(ctx context.Context, req *contactsv1.FindContactByPhoneRequest) (*contactsv1.FindContactByPhoneResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	p, err := onlyPhone(req.GetPhone())
	if err != nil {
		return nil, err
	}
	c, err := s.store.GetByPhone(ctx, org, p)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.New(codes.NotFound, apierr.ReasonContactNotFound, "no contact has this phone")
	}
	if err != nil {
		return nil, err
	}
	pc, err := toContact(c)
	if err != nil {
		return nil, err
	}
	return &contactsv1.FindContactByPhoneResponse{Contact: pc}, nil
}

// RecordInbound marks the contact that sent an inbound message textable; an unknown sender
// gets no contact.
func (s *Server) RecordInbound(ctx context.Context, req *contactsv1.RecordInboundRequest) (*contactsv1.RecordInboundResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	p, err := onlyPhone(req.GetPhone())
	if err != nil {
		return nil, err
	}
	id, err := s.store.MarkTextable(ctx, org, p)
	if errors.Is(err, store.ErrNotFound) {
		return &contactsv1.RecordInboundResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	return &contactsv1.RecordInboundResponse{Found: true, ContactId: id.String()}, nil
}

// SetConsent records an opt-out or opt-in of the contact with a phone; a sign-up's opt-in
// may create the contact and add tags to it.
func (s *Server) SetConsent(ctx context.Context, req *contactsv1.SetConsentRequest) (*contactsv1.SetConsentResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	v := newValidator()
	source := strings.TrimSpace(req.GetSource())
	ch := store.ConsentChange{
		Phone: v.requiredPhone(req.GetPhone()), OptedIn: req.GetOptedIn(), Origin: store.ParseSource(source),
	}
	ch.Origin.MessageID, ch.Origin.MessageText = strings.TrimSpace(req.GetMessageId()), req.GetMessageText()
	switch at := req.GetOccurredAt(); {
	case at != nil && at.CheckValid() != nil:
		v.fields.Add("occurredAt", "must be a valid timestamp")
	case at != nil:
		ch.OccurredAt = at.AsTime()
	case !ch.OptedIn:
		v.fields.Add("occurredAt", "is required for an opt-out")
	default:
		ch.OccurredAt = time.Now() // an opt-in keeps no time; this one dates its event
	}
	switch {
	case utf8.RuneCountInString(source) > maxSourceLen:
		v.fields.Add("source", "at most "+strconv.Itoa(maxSourceLen)+" characters")
	case !slices.Contains(messageSources, ch.Origin.Source):
		v.fields.Add("source", "must be <kind>:<detail> with kind one of "+strings.Join(messageSources, ", "))
	}
	if utf8.RuneCountInString(ch.Origin.MessageID) > maxSourceLen {
		v.fields.Add("messageId", "at most "+strconv.Itoa(maxSourceLen)+" characters")
	}
	if len(ch.Origin.MessageText) > maxMessageTextLen {
		v.fields.Add("messageText", "at most "+strconv.Itoa(maxMessageTextLen)+" bytes")
	}
	// A sign-up's tags are checked as a create's are; only an opt-in adds any.
	if len(req.GetAddTags()) > 0 {
		if !ch.OptedIn {
			v.fields.Add("addTags", "only an opt-in adds tags")
		}
		ch.AddTags = v.tags("addTags", req.GetAddTags())
	}
	ch.CreateIfMissing = req.GetCreateIfMissing()
	if err := v.err(); err != nil {
		return nil, err
	}
	res, err := s.store.SetConsent(ctx, org, ch, s.lookups)
	if err != nil {
		return nil, storeError(err, "contact")
	}
	out := &contactsv1.SetConsentResponse{Found: res.Found, IsOptedIn: res.IsOptedIn, Changed: res.Changed}
	if res.Found {
		out.ContactId = res.ContactID.String()
	}
	return out, nil
}

// CheckSendable answers each phone in request order: sendable when a contact has it, is opted
// in and is known to be textable.
//
// Dispatch asks with the E.164 phones contacts stored, so the phones are first looked up as
// given: a stored phone was normalized when it was written, and parsing it again (the larger
// part of this call's CPU under a campaign) would change nothing. Only a phone no contact has
// as given is normalized and looked up again.
func (s *Server) CheckSendable(ctx context.Context, req *contactsv1.CheckSendableRequest) (*contactsv1.CheckSendableResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	phones := req.GetPhones()
	if len(phones) > maxSendableBatch {
		return nil, apierr.Field("phones", "at most "+strconv.Itoa(maxSendableBatch)+" phones per call")
	}
	found, err := s.store.SendabilityByPhone(ctx, org, phones)
	if err != nil {
		return nil, err
	}
	results := make([]*contactsv1.Sendability, len(phones))
	var missed []string
	for i, in := range phones {
		if _, ok := found[in]; ok {
			results[i] = &contactsv1.Sendability{Phone: in}
			continue
		}
		p, err := phone.Normalize(in)
		if err != nil {
			results[i] = &contactsv1.Sendability{Phone: in, Reason: contactsv1.SendableReason_SENDABLE_REASON_INVALID_PHONE}
			continue
		}
		results[i] = &contactsv1.Sendability{Phone: p}
		if p != in {
			missed = append(missed, p)
		}
	}
	if len(missed) > 0 {
		more, err := s.store.SendabilityByPhone(ctx, org, missed)
		if err != nil {
			return nil, err
		}
		maps.Copy(found, more)
	}
	for _, r := range results {
		if r.Reason == contactsv1.SendableReason_SENDABLE_REASON_INVALID_PHONE {
			continue
		}
		sb, ok := found[r.Phone]
		if ok {
			r.ContactId, r.FirstName, r.LastName = sb.ContactID.String(), sb.FirstName, sb.LastName
		}
		r.Reason = sendableReason(sb, ok)
		r.Sendable = r.Reason == contactsv1.SendableReason_SENDABLE_REASON_OK
	}
	return &contactsv1.CheckSendableResponse{Results: results}, nil
}

// sendableReason ranks the reasons: consent before textability, so an opted-out landline
// reads as opted out.
func sendableReason(sb store.Sendability, found bool) contactsv1.SendableReason {
	switch {
	case !found:
		return contactsv1.SendableReason_SENDABLE_REASON_NO_CONTACT
	case !sb.IsOptedIn:
		return contactsv1.SendableReason_SENDABLE_REASON_OPTED_OUT
	case sb.IsTextable == nil:
		return contactsv1.SendableReason_SENDABLE_REASON_LOOKUP_PENDING
	case !*sb.IsTextable:
		return contactsv1.SendableReason_SENDABLE_REASON_NOT_TEXTABLE
	}
	return contactsv1.SendableReason_SENDABLE_REASON_OK
}
