// Package store is the orgs service's SQL: organizations and memberships.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chorus-sms/chorus/pkg/tenant"
)

// ErrNotFound is returned when a row does not exist.
var ErrNotFound = errors.New("not found")

// Organization is a tenant row.
type Organization struct {
	ID               uuid.UUID
	Name             string
	Timezone         string
	Sandbox          bool
	ShortLinkBaseURL string
	HelpText         string
	// StateQuietHoursOff turns off the state quiet-hours laws for the organization's sends.
	StateQuietHoursOff bool
	// FrequencyCapHours skips a campaign's recipient sent a campaign message within the last
	// this many hours; 0 is off.
	FrequencyCapHours int32
	CreatedAt         time.Time
}

// Store runs the orgs queries.
type Store struct{ pool *pgxpool.Pool }

// New returns a Store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// CreateOrganization inserts o with a new UUIDv7 id and returns it as stored.
func (s *Store) CreateOrganization(ctx context.Context, o Organization) (Organization, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Organization{}, fmt.Errorf("new org id: %w", err)
	}
	o.ID = id
	err = s.pool.QueryRow(ctx, `
		INSERT INTO organizations (id, name, timezone, sandbox, short_link_base_url, help_text, state_quiet_hours_off)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at`,
		o.ID, o.Name, o.Timezone, o.Sandbox, o.ShortLinkBaseURL, o.HelpText, o.StateQuietHoursOff).Scan(&o.CreatedAt)
	if err != nil {
		return Organization{}, fmt.Errorf("insert organization: %w", err)
	}
	return o, nil
}

// GetOrganization returns one organization or ErrNotFound.
func (s *Store) GetOrganization(ctx context.Context, id uuid.UUID) (Organization, error) {
	o := Organization{ID: id}
	err := s.pool.QueryRow(ctx, `
		SELECT name, timezone, sandbox, short_link_base_url, help_text, state_quiet_hours_off, frequency_cap_hours, created_at
		FROM organizations WHERE id = $1`, id).
		Scan(&o.Name, &o.Timezone, &o.Sandbox, &o.ShortLinkBaseURL, &o.HelpText, &o.StateQuietHoursOff, &o.FrequencyCapHours, &o.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Organization{}, ErrNotFound
	}
	if err != nil {
		return Organization{}, fmt.Errorf("select organization: %w", err)
	}
	return o, nil
}

// SetSettings changes org's frequency cap in hours (0: off) and whether state quiet-hours
// laws are off, each only when given, in one statement; ErrNotFound when the organization
// does not exist.
func (s *Store) SetSettings(ctx context.Context, org uuid.UUID, capHours *int32, stateRulesOff *bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE organizations SET frequency_cap_hours = coalesce($2, frequency_cap_hours),
		state_quiet_hours_off = coalesce($3, state_quiet_hours_off) WHERE id = $1`, org, capHours, stateRulesOff)
	if err != nil {
		return fmt.Errorf("update settings: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// SetMembership grants or changes access; ErrNotFound when the organization does not exist.
func (s *Store) SetMembership(ctx context.Context, org uuid.UUID, user string, access tenant.Access) error {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO memberships (organization_id, user_subject, access)
		SELECT id, $2, $3 FROM organizations WHERE id = $1
		ON CONFLICT (organization_id, user_subject)
		DO UPDATE SET access = EXCLUDED.access, updated_at = now()`,
		org, user, access.String())
	if err != nil {
		return fmt.Errorf("upsert membership: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// RemoveMembership revokes access; removing a missing membership is not an error.
func (s *Store) RemoveMembership(ctx context.Context, org uuid.UUID, user string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM memberships WHERE organization_id = $1 AND user_subject = $2`, org, user); err != nil {
		return fmt.Errorf("delete membership: %w", err)
	}
	return nil
}

// Access returns the user's access level, AccessNone when not a member.
func (s *Store) Access(ctx context.Context, org uuid.UUID, user string) (tenant.Access, error) {
	var access string
	err := s.pool.QueryRow(ctx, `SELECT access FROM memberships WHERE organization_id = $1 AND user_subject = $2`, org, user).Scan(&access)
	if errors.Is(err, pgx.ErrNoRows) {
		return tenant.AccessNone, nil
	}
	if err != nil {
		return tenant.AccessNone, fmt.Errorf("select membership: %w", err)
	}
	return tenant.ParseAccess(access), nil
}
