package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/route"
	"github.com/chorus-sms/chorus/pkg/smsrules"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/dispatch"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// MaxMessageLength bounds a message's text, in characters after normalization and link
// shortening: 1,600 is the most a carrier takes in one request.
const MaxMessageLength = smsrules.MaxTextLength

// Reply sends one message into a thread now, whatever the quiet hours.
func (s *Server) Reply(ctx context.Context, req *messagingv1.ReplyRequest) (*messagingv1.ReplyResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	to, forced, err := validateReply(req)
	if err != nil {
		return nil, err
	}
	from, err := s.fromNumber(ctx, org, req.GetFromPhoneNumberId(), false)
	if err != nil {
		return nil, err
	}
	if err := s.checkRecipient(ctx, org, to); err != nil {
		return nil, err
	}
	if from == nil {
		if from, err = s.fromNumber(ctx, org, "", true); err != nil {
			return nil, err
		}
	}
	o, err := s.cfg.Orgs.Organization(ctx, org)
	if err != nil {
		return nil, err
	}
	text := req.GetMessage()
	if req.NormalizeText == nil || req.GetNormalizeText() {
		text = smsrules.Normalize(text)
	}
	id := uuid.Must(uuid.NewV7())
	text, short, err := s.shorten(o, text)
	if err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(text); n > MaxMessageLength {
		return nil, apierr.Field("message", fmt.Sprintf("is %d characters once links are shortened; at most %d are sent", n, MaxMessageLength))
	}
	var media []string
	if req.GetMediaUrl() != "" {
		media = []string{req.GetMediaUrl()}
	}
	m := store.Message{
		ID:            id,
		OrgID:         org,
		Direction:     store.Outgoing,
		ContactPhone:  to,
		OurNumber:     from.Number,
		PhoneNumberID: &from.ID,
		Body:          text,
		MediaURLs:     media,
		Status:        store.StatusSending,
		Provider:      s.cfg.Dispatch.ProviderFor(o.GetSandbox()).Name(),
		Billable:      !o.GetSandbox(),
		SourceKind:    store.SourceReply,
		CreatedAt:     time.Now(),
	}
	// pkg/route's rule, on the text as sent: media or a forced MMS is MMS, AUTO is MMS for a
	// text longer than two segments.
	m.IsMMS, m.Credits = route.Price(forced, len(media) > 0, text)
	if m.Billable {
		if err := s.hold(ctx, &m); err != nil {
			return nil, err
		}
	}
	err = s.cfg.Store.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.cfg.Store.InsertOutgoing(ctx, tx, &m); err != nil {
			return err
		}
		return s.insertLinks(ctx, tx, org, []uuid.UUID{id}, shortLinks{id: short})
	})
	if err != nil {
		s.releaseHold(ctx, m)
		return nil, err
	}
	out, err := s.cfg.Dispatch.SendNow(ctx, m)
	if err != nil {
		return nil, err
	}
	if out.ErrorCode == dispatch.CodeNotSendable {
		// The contact opted out (or became unreachable) while the reply waited for its number:
		// it is recorded failed, costs nothing, and the caller gets the answer it would get now.
		return nil, recipientError(out.Refused)
	}
	switch out.ErrorCode {
	case dispatch.CodeCarrierUnavailable:
		return nil, apierr.New(codes.Unavailable, apierr.ReasonCarrierUnavailable, "the carrier did not take the message; nothing was sent or charged, try again")
	case dispatch.CodeUnavailable:
		return nil, apierr.New(codes.Unavailable, apierr.ReasonUnavailable, "the message could not be handed to the carrier now; nothing was sent or charged, try again")
	}
	log := &messagingv1.MessageLog{Id: id.String(), PhoneNumber: to, Message: text, Status: apiStatus(out.Status)}
	if log.Status == store.StatusSent {
		log.SentAt = timestamppb.Now()
	}
	return &messagingv1.ReplyResponse{
		Success:           out.Status != store.StatusFailed,
		MessageLog:        log,
		Provider:          m.Provider,
		ProviderMessageId: out.ProviderMessageID,
	}, nil
}

// validateReply checks the body and returns the recipient in E.164 and the forceRoute asked
// for (route.Auto when none).
func validateReply(req *messagingv1.ReplyRequest) (string, string, error) {
	f := apierr.Fields{}
	to, err := threadPhone(req.GetPhoneNumber())
	if err != nil {
		f.Add("phoneNumber", "must be a phone number")
	}
	if strings.TrimSpace(req.GetMessage()) == "" {
		f.Add("message", "must not be empty")
	}
	forced, ok := route.Parse(req.GetForceRoute())
	if !ok {
		f.Add("forceRoute", route.Invalid)
	}
	// A mediaUrl with forceRoute SMS is no conflict: media means MMS (pkg/route).
	if u := req.GetMediaUrl(); u != "" && !smsrules.PublicMediaURL(u) {
		f.Add("mediaUrl", "must be a public http(s) URL")
	}
	if req.GetFromPhoneNumberId() != "" {
		if _, err := uuid.Parse(req.GetFromPhoneNumberId()); err != nil {
			f.Add("fromPhoneNumberId", "must be a UUID")
		}
	}
	return to, forced, f.Err()
}

// fromNumber resolves the sending number: the one named (403 unless it is the
// organization's), or with useDefault the default (NO_FROM_NUMBER without one). It returns nil
// when no id is named and useDefault is false.
func (s *Server) fromNumber(ctx context.Context, org uuid.UUID, id string, useDefault bool) (*store.Number, error) {
	if id != "" {
		n, err := s.cfg.Store.Number(ctx, org, uuid.MustParse(id))
		if errors.Is(err, store.ErrNotFound) {
			return nil, forbidden("fromPhoneNumberId is not a number of this organization")
		}
		return &n, err
	}
	if !useDefault {
		return nil, nil
	}
	n, err := s.cfg.Store.DefaultNumber(ctx, org)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.New(codes.InvalidArgument, apierr.ReasonNoFromNumber, "the organization has no default phone number")
	}
	return &n, err
}

// checkRecipient refuses a reply to a phone that is not a contact, opted out, not textable,
// or whose lookup has not finished.
func (s *Server) checkRecipient(ctx context.Context, org uuid.UUID, to string) error {
	known, err := s.contactsByPhone(ctx, org, []string{to})
	if err != nil {
		return err
	}
	return recipientError(known[to].GetReason())
}

// recipientError is the spec's answer to a reply whose recipient contacts refuses for reason;
// nil when reason is OK.
func recipientError(reason contactsv1.SendableReason) error {
	switch reason {
	case contactsv1.SendableReason_SENDABLE_REASON_OK:
		return nil
	case contactsv1.SendableReason_SENDABLE_REASON_OPTED_OUT:
		return apierr.New(codes.InvalidArgument, apierr.ReasonContactOptedOut, "the contact opted out")
	case contactsv1.SendableReason_SENDABLE_REASON_NOT_TEXTABLE:
		return apierr.New(codes.InvalidArgument, apierr.ReasonContactNonTextable, "the contact's number cannot receive texts")
	case contactsv1.SendableReason_SENDABLE_REASON_LOOKUP_PENDING:
		return apierr.New(codes.InvalidArgument, apierr.ReasonContactLookupPending, "the contact's phone lookup has not completed; try again shortly")
	default:
		return apierr.New(codes.InvalidArgument, apierr.ReasonContactNotFound, "no contact has this phone number; create the contact first")
	}
}

// hold reserves the reply's credits under a hold of its own id; a refusal is the 402 of the
// spec (INSUFFICIENT_CREDITS or BILLING_SUSPENDED).
func (s *Server) hold(ctx context.Context, m *store.Message) error {
	reason, err := dispatch.PlaceHold(ctx, s.cfg.Billing, m.OrgID, m.ID, m.Credits)
	if err != nil {
		return err
	}
	switch reason {
	case "":
		m.HoldID = m.ID.String()
		return nil
	case apierr.ReasonBillingSuspended:
		return errSuspended
	default:
		return apierr.New(codes.FailedPrecondition, reason, fmt.Sprintf("the reply needs %d credits and the balance cannot cover them", m.Credits))
	}
}

// errSuspended refuses a send of an organization whose billing is suspended (a 402).
var errSuspended = apierr.BillingSuspended()

// releaseHold gives back a hold whose message was never stored.
func (s *Server) releaseHold(ctx context.Context, m store.Message) {
	if m.HoldID == "" {
		return
	}
	_ = s.cfg.Billing.ReleaseHold(context.WithoutCancel(ctx), m.OrgID, m.HoldID)
}
