package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/orgs/internal/store"
)

// maxFrequencyCapHours is the longest frequency cap: 30 days, as far back as a probe of
// messaging's log per recipient is worth looking.
const maxFrequencyCapHours = 720

// GetSettings returns the calling organization's sending settings.
func (s *Server) GetSettings(ctx context.Context, _ *orgsv1.GetSettingsRequest) (*orgsv1.GetSettingsResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	set, err := s.settings(ctx, org)
	if err != nil {
		return nil, err
	}
	return &orgsv1.GetSettingsResponse{Settings: set}, nil
}

// UpdateSettings changes the settings sent and answers them all as stored. Messaging reads
// them through its orgs client, which caches an organization: the change is announced
// (OrganizationChannel) before the answer, and every client following it drops its copy on
// hearing it, so the messages sent after it apply it (within the cache's TTL should the
// announcement be lost).
func (s *Server) UpdateSettings(ctx context.Context, req *orgsv1.UpdateSettingsRequest) (*orgsv1.UpdateSettingsResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	in := req.GetSettings()
	if in.FrequencyCapHours != nil {
		h := in.GetFrequencyCapHours()
		if h < 0 || h > maxFrequencyCapHours {
			return nil, apierr.Field("frequencyCapHours", fmt.Sprintf("must be 0 (off) to %d hours", maxFrequencyCapHours))
		}
	}
	var stateRulesOff *bool
	if in.StateQuietHours != nil {
		off := !in.GetStateQuietHours()
		stateRulesOff = &off
	}
	if in.FrequencyCapHours != nil || stateRulesOff != nil {
		if err := s.store.SetSettings(ctx, org, in.FrequencyCapHours, stateRulesOff); err != nil {
			return nil, orgMissing(err)
		}
		s.changes.orgChanged(ctx, org)
	}
	set, err := s.settings(ctx, org)
	if err != nil {
		return nil, err
	}
	return &orgsv1.UpdateSettingsResponse{Settings: set}, nil
}

// settings reads org's settings.
func (s *Server) settings(ctx context.Context, org uuid.UUID) (*orgsv1.Settings, error) {
	o, err := s.store.GetOrganization(ctx, org)
	if err != nil {
		return nil, orgMissing(err)
	}
	return &orgsv1.Settings{FrequencyCapHours: o.FrequencyCapHours, StateQuietHours: !o.StateQuietHoursOff}, nil
}

// orgMissing answers an organization that does not exist (deleted under a cached membership)
// as not found.
func orgMissing(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("organization not found")
	}
	return err
}
