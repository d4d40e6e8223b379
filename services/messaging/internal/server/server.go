// Package server implements the messaging gRPC API.
package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients/billing"
	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/cursor"
	"github.com/chorus-sms/chorus/pkg/phone"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/dispatch"
	"github.com/chorus-sms/chorus/services/messaging/internal/inbound"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// UnscopedMethods are callable without an organization: the operator's AddNumber and the
// gateway's public webhook and short-link routes, where the number or code names the
// organization.
var UnscopedMethods = []string{
	messagingv1.MessagingService_AddNumber_FullMethodName,
	messagingv1.MessagingService_HandleWebhook_FullMethodName,
	messagingv1.MessagingService_FollowShortLink_FullMethodName,
}

// Config holds the server's collaborators.
type Config struct {
	Store    *store.Store
	Orgs     *orgs.Client
	Contacts *contacts.Client
	Billing  *billing.Client
	Dispatch *dispatch.Dispatcher
	Inbound  *inbound.Processor
	Cursors  *cursor.Codec
	// PublicURL is the gateway's public base URL: webhooks are signed against it and short
	// links default to it.
	PublicURL string
	// Tokens are the webhook signing secrets by carrier name.
	Tokens map[string]string
}

// Server implements messagingv1.MessagingServiceServer.
type Server struct {
	messagingv1.UnimplementedMessagingServiceServer
	cfg Config
}

// New returns the server.
func New(cfg Config) *Server { return &Server{cfg: cfg} }

// threadPhone normalizes a thread's phone from the path.
func threadPhone(s string) (string, error) {
	p, err := phone.Normalize(s)
	if err != nil {
		return "", apierr.Field("phoneNumber", "must be a phone number")
	}
	return p, nil
}

// contactsByPhone returns what contacts knows of each phone (name, consent, textability).
func (s *Server) contactsByPhone(ctx context.Context, org uuid.UUID, phones []string) (map[string]*contactsv1.Sendability, error) {
	out := make(map[string]*contactsv1.Sendability, len(phones))
	const batch = 1000
	for start := 0; start < len(phones); start += batch {
		end := min(start+batch, len(phones))
		results, err := s.cfg.Contacts.CheckSendable(ctx, org, phones[start:end])
		if err != nil {
			return nil, fmt.Errorf("check sendable: %w", err)
		}
		for _, r := range results {
			out[r.GetPhone()] = r
		}
	}
	return out, nil
}

// notFound maps store.ErrNotFound to a 404 with msg.
func notFound(err error, msg string) error {
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound(msg)
	}
	return err
}

// forbidden is the spec's 403 for a sending number of another organization.
func forbidden(msg string) error {
	return apierr.New(codes.PermissionDenied, apierr.ReasonForbidden, msg)
}
