// Package server implements chorus.orgs.v1.OrgsService.
package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/tenant"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/orgs/internal/store"
)

// maxHelpText is the longest HELP answer in characters: two SMS segments.
const maxHelpText = 320

// Server answers the OrgsService RPCs.
type Server struct {
	orgsv1.UnimplementedOrgsServiceServer
	store   *store.Store
	changes *announcer
}

// New returns a Server announcing membership and settings changes through rdb.
func New(st *store.Store, rdb *redis.Client, log *slog.Logger) *Server {
	return &Server{store: st, changes: &announcer{rdb: rdb, log: log}}
}

// UnscopedMethods are callable without an organization on the call: they are the operator
// and gateway RPCs of an internal service.
var UnscopedMethods = []string{
	orgsv1.OrgsService_CreateOrganization_FullMethodName,
	orgsv1.OrgsService_GetOrganization_FullMethodName,
	orgsv1.OrgsService_SetMembership_FullMethodName,
	orgsv1.OrgsService_RemoveMembership_FullMethodName,
	orgsv1.OrgsService_CheckAccess_FullMethodName,
}

// CreateOrganization validates and stores a new organization.
func (s *Server) CreateOrganization(ctx context.Context, req *orgsv1.CreateOrganizationRequest) (*orgsv1.CreateOrganizationResponse, error) {
	fields := apierr.Fields{}
	name := strings.TrimSpace(req.GetName())
	if name == "" || len(name) > 200 {
		fields.Add("name", "required, at most 200 characters")
	}
	tz := req.GetTimezone()
	if tz == "" {
		tz = "America/New_York"
	}
	if _, err := time.LoadLocation(tz); err != nil || tz == "Local" {
		fields.Add("timezone", "must be an IANA timezone such as America/Chicago")
	}
	help := strings.TrimSpace(req.GetHelpText())
	if utf8.RuneCountInString(help) > maxHelpText {
		fields.Add("helpText", "at most 320 characters")
	}
	if err := fields.Err(); err != nil {
		return nil, err
	}
	o, err := s.store.CreateOrganization(ctx, store.Organization{
		Name: name, Timezone: tz, Sandbox: req.GetSandbox(), ShortLinkBaseURL: req.GetShortLinkBaseUrl(), HelpText: help,
		StateQuietHoursOff: req.GetStateQuietHoursOff(),
	})
	if err != nil {
		return nil, err
	}
	httpcode.Set(ctx, 201)
	return &orgsv1.CreateOrganizationResponse{Organization: toProto(o)}, nil
}

// GetOrganization returns one organization.
func (s *Server) GetOrganization(ctx context.Context, req *orgsv1.GetOrganizationRequest) (*orgsv1.GetOrganizationResponse, error) {
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	o, err := s.store.GetOrganization(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("organization not found")
	}
	if err != nil {
		return nil, err
	}
	return &orgsv1.GetOrganizationResponse{Organization: toProto(o)}, nil
}

// SetMembership grants access and announces the change to the gateways' caches.
func (s *Server) SetMembership(ctx context.Context, req *orgsv1.SetMembershipRequest) (*orgsv1.SetMembershipResponse, error) {
	org, user, err := parseMember(req.GetOrganizationId(), req.GetUserSubject())
	if err != nil {
		return nil, err
	}
	access := tenant.Access(req.GetAccess())
	if access < tenant.AccessRead || access > tenant.AccessAdmin {
		return nil, apierr.Field("access", "must be read, write or admin")
	}
	if err := s.store.SetMembership(ctx, org, user, access); errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("organization not found")
	} else if err != nil {
		return nil, err
	}
	s.changes.changed(ctx, org, user)
	return &orgsv1.SetMembershipResponse{}, nil
}

// RemoveMembership revokes access and announces the change to the gateways' caches.
func (s *Server) RemoveMembership(ctx context.Context, req *orgsv1.RemoveMembershipRequest) (*orgsv1.RemoveMembershipResponse, error) {
	org, user, err := parseMember(req.GetOrganizationId(), req.GetUserSubject())
	if err != nil {
		return nil, err
	}
	if err := s.store.RemoveMembership(ctx, org, user); err != nil {
		return nil, err
	}
	s.changes.changed(ctx, org, user)
	return &orgsv1.RemoveMembershipResponse{}, nil
}

// CheckAccess answers the user's level from the database; the gateways cache it in process
// (orgsclient.AccessCache) for at most a second.
func (s *Server) CheckAccess(ctx context.Context, req *orgsv1.CheckAccessRequest) (*orgsv1.CheckAccessResponse, error) {
	org, user, err := parseMember(req.GetOrganizationId(), req.GetUserSubject())
	if err != nil {
		return nil, err
	}
	a, err := s.store.Access(ctx, org, user)
	if err != nil {
		return nil, err
	}
	return &orgsv1.CheckAccessResponse{Access: orgsv1.Access(a)}, nil
}

func parseID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, apierr.Field(field, "must be a UUID")
	}
	return id, nil
}

func parseMember(orgID, user string) (uuid.UUID, string, error) {
	org, err := parseID("organizationId", orgID)
	if err != nil {
		return uuid.Nil, "", err
	}
	if strings.TrimSpace(user) == "" || len(user) > 255 {
		return uuid.Nil, "", apierr.Field("userSubject", "required, at most 255 characters")
	}
	return org, user, nil
}

func toProto(o store.Organization) *orgsv1.Organization {
	return &orgsv1.Organization{
		Id: o.ID.String(), Name: o.Name, Timezone: o.Timezone, Sandbox: o.Sandbox,
		ShortLinkBaseUrl: o.ShortLinkBaseURL, HelpText: o.HelpText, CreatedAt: timestamppb.New(o.CreatedAt),
		StateQuietHoursOff: o.StateQuietHoursOff, FrequencyCapHours: o.FrequencyCapHours,
	}
}
