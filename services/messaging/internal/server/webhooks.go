package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/twilio"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/dispatch"
)

// emptyTwiML answers an inbound webhook: keyword answers are sent through the API, where they
// are logged and tracked, not inline.
const emptyTwiML = `<?xml version="1.0" encoding="UTF-8"?><Response></Response>`

// HandleWebhook checks a carrier callback's signature, then stores an inbound message or
// applies a status. Both carriers speak Twilio's dialect: form fields and X-Twilio-Signature
// over the public URL, each with its own token.
func (s *Server) HandleWebhook(ctx context.Context, req *messagingv1.HandleWebhookRequest) (*messagingv1.HandleWebhookResponse, error) {
	token, ok := s.cfg.Tokens[req.GetProvider()]
	if !ok {
		return nil, apierr.NotFound("no carrier named " + req.GetProvider())
	}
	form := url.Values{}
	for _, p := range req.GetParams() {
		form.Add(p.GetKey(), p.GetValue())
	}
	full := s.cfg.PublicURL + req.GetPathAndQuery()
	if req.GetSignature() == "" || !twilio.ValidSignature(token, full, form, req.GetSignature()) {
		return nil, apierr.New(codes.PermissionDenied, apierr.ReasonInvalidSignature, "the request's signature does not match")
	}
	switch req.GetKind() {
	case messagingv1.WebhookKind_WEBHOOK_KIND_INBOUND:
		in, err := carrier.ParseTwilioInbound(form)
		if err != nil {
			return nil, fieldError(err)
		}
		if err := s.cfg.Inbound.Receive(ctx, req.GetProvider(), in); err != nil {
			return nil, err
		}
		return &messagingv1.HandleWebhookResponse{ContentType: "text/xml", Body: emptyTwiML}, nil
	case messagingv1.WebhookKind_WEBHOOK_KIND_STATUS:
		st, err := carrier.ParseTwilioStatus(form)
		if err != nil {
			return nil, fieldError(err)
		}
		id := callbackMessageID(req.GetPathAndQuery())
		err = s.cfg.Dispatch.ApplyStatus(ctx, req.GetProvider(), id, st)
		if errors.Is(err, dispatch.ErrUnknownMessage) {
			return nil, apierr.NotFound("no message matches the callback")
		}
		if err != nil {
			return nil, err
		}
		return &messagingv1.HandleWebhookResponse{ContentType: "text/plain", Body: ""}, nil
	default:
		return nil, apierr.Field("kind", "must be inbound or status")
	}
}

// fieldError answers a carrier form that failed to parse with a 400 naming its field.
func fieldError(err error) error {
	var fe *twilio.FieldError
	if errors.As(err, &fe) {
		return apierr.Field(fe.Field, fe.Reason)
	}
	return fmt.Errorf("parse carrier form: %w", err)
}

// callbackMessageID reads our message id from a status callback URL; uuid.Nil when absent.
func callbackMessageID(pathAndQuery string) uuid.UUID {
	u, err := url.Parse(pathAndQuery)
	if err != nil {
		return uuid.Nil
	}
	id, err := uuid.Parse(u.Query().Get("messageId"))
	if err != nil {
		return uuid.Nil
	}
	return id
}
