// Package store is the polls schema: polls, their participants and responses. Every query
// filters on the organization (tenancy), and every participant move is a conditional UPDATE,
// so a job or event handled twice changes nothing the second time.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chorus-sms/chorus/pkg/audience"
	"github.com/chorus-sms/chorus/pkg/orgtable"
	"github.com/chorus-sms/chorus/services/polls/internal/questions"
)

// Poll statuses (spec section 3).
const (
	StatusDraft     = "draft"
	StatusScheduled = "scheduled"
	StatusActive    = "active"
	StatusPaused    = "paused"
	StatusCompleted = "completed"
)

// ErrNotFound is a poll missing from the organization (or another organization's).
var ErrNotFound = errors.New("poll not found")

// Poll is one row of polls.
type Poll struct {
	ID                      uuid.UUID
	OrgID                   uuid.UUID
	Name                    string
	Status                  string
	IntroText               string
	OutroText               string
	IntroMediaURL           *string
	OutroMediaURL           *string
	Questions               []questions.Question
	CompletionTargetEnabled bool
	CompletionTarget        *int32
	MaxReasks               int32
	TimeoutHours            int32
	Timezone                *string
	ScheduledFor            *time.Time
	SegmentID               *uuid.UUID
	ContactFilter           *audience.Filter
	FromPhoneNumberID       *uuid.UUID
	// FromPhoneNumberIDs is the poll's number pool (nil for none; FromPhoneNumberID is then
	// its first number): each participant is given one of them (Participant.FromPhoneNumberID).
	FromPhoneNumberIDs []uuid.UUID
	Run                int32
	AudienceResolved   bool
	HeldCredits        int32
	ParticipantCount   int32
	CompletedCount     int32
	FailureReason      *string
	CreatedAt          time.Time
	UpdatedAt          time.Time
	StartedAt          *time.Time
	CompletedAt        *time.Time
	Sending            bool
	QuietZone          string
}

// Store reads and writes the polls schema; the polls table's reads (Get, GetTx, Lock, List)
// and InTx are its Table's.
type Store struct {
	*orgtable.Table[Poll]
	pool *pgxpool.Pool
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{Table: orgtable.New(pool, "polls", pollColumns, scanPoll), pool: pool}
}

// insertColumns are the columns a new poll is written with; pollColumns adds the start's
// progress the engine keeps.
const insertColumns = `id, organization_id, name, status, introductory_text, outro_text, intro_media_url, outro_media_url,
	questions, completion_target_enabled, completion_target, max_reasks, participant_timeout_hours, timezone,
	scheduled_for, segment_id, contact_filter, from_phone_number_id, run, audience_resolved, held_credits,
	participant_count, completed_count, failure_reason, created_at, updated_at, started_at, completed_at`

const pollColumns = insertColumns + `, sending, quiet_zone, from_phone_number_ids`

func scanPoll(row pgx.Row) (Poll, error) {
	var p Poll
	var qs, cf []byte
	err := row.Scan(&p.ID, &p.OrgID, &p.Name, &p.Status, &p.IntroText, &p.OutroText, &p.IntroMediaURL, &p.OutroMediaURL,
		&qs, &p.CompletionTargetEnabled, &p.CompletionTarget, &p.MaxReasks, &p.TimeoutHours, &p.Timezone,
		&p.ScheduledFor, &p.SegmentID, &cf, &p.FromPhoneNumberID, &p.Run, &p.AudienceResolved, &p.HeldCredits,
		&p.ParticipantCount, &p.CompletedCount, &p.FailureReason, &p.CreatedAt, &p.UpdatedAt, &p.StartedAt, &p.CompletedAt,
		&p.Sending, &p.QuietZone, &p.FromPhoneNumberIDs)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("scan poll: %w", err)
	}
	if err := json.Unmarshal(qs, &p.Questions); err != nil {
		return p, fmt.Errorf("poll %s questions: %w", p.ID, err)
	}
	if cf != nil {
		p.ContactFilter = &audience.Filter{}
		if err := json.Unmarshal(cf, p.ContactFilter); err != nil {
			return p, fmt.Errorf("poll %s contact filter: %w", p.ID, err)
		}
	}
	return p, nil
}

func (p *Poll) jsonColumns() (qs, cf []byte, err error) {
	if qs, err = json.Marshal(p.Questions); err != nil {
		return nil, nil, fmt.Errorf("poll questions: %w", err)
	}
	if p.ContactFilter != nil {
		if cf, err = json.Marshal(p.ContactFilter); err != nil {
			return nil, nil, fmt.Errorf("poll contact filter: %w", err)
		}
	}
	return qs, cf, nil
}

// Insert stores a new poll.
func (s *Store) Insert(ctx context.Context, tx pgx.Tx, p *Poll) error {
	qs, cf, err := p.jsonColumns()
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO polls (`+insertColumns+`)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,$27,$28)`,
		p.ID, p.OrgID, p.Name, p.Status, p.IntroText, p.OutroText, p.IntroMediaURL, p.OutroMediaURL,
		qs, p.CompletionTargetEnabled, p.CompletionTarget, p.MaxReasks, p.TimeoutHours, p.Timezone,
		p.ScheduledFor, p.SegmentID, cf, p.FromPhoneNumberID, p.Run, p.AudienceResolved, p.HeldCredits,
		p.ParticipantCount, p.CompletedCount, p.FailureReason, p.CreatedAt, p.UpdatedAt, p.StartedAt, p.CompletedAt)
	if err != nil {
		return fmt.Errorf("insert poll: %w", err)
	}
	return nil
}

// Save writes the fields a person or a state move changes (not the counters and progress the
// engine keeps), stamping updatedAt.
func (s *Store) Save(ctx context.Context, tx pgx.Tx, p *Poll) error {
	qs, cf, err := p.jsonColumns()
	if err != nil {
		return err
	}
	p.UpdatedAt = time.Now().UTC()
	_, err = tx.Exec(ctx, `UPDATE polls SET name = $3, status = $4, introductory_text = $5, outro_text = $6,
		intro_media_url = $7, outro_media_url = $8, questions = $9, completion_target_enabled = $10,
		completion_target = $11, max_reasks = $12, participant_timeout_hours = $13, timezone = $14,
		scheduled_for = $15, segment_id = $16, contact_filter = $17, from_phone_number_id = $18, run = $19,
		started_at = $20, completed_at = $21, updated_at = $22, from_phone_number_ids = $23
		WHERE organization_id = $1 AND id = $2`,
		p.OrgID, p.ID, p.Name, p.Status, p.IntroText, p.OutroText, p.IntroMediaURL, p.OutroMediaURL,
		qs, p.CompletionTargetEnabled, p.CompletionTarget, p.MaxReasks, p.TimeoutHours, p.Timezone,
		p.ScheduledFor, p.SegmentID, cf, p.FromPhoneNumberID, p.Run, p.StartedAt, p.CompletedAt, p.UpdatedAt, p.FromPhoneNumberIDs)
	if err != nil {
		return fmt.Errorf("save poll: %w", err)
	}
	return nil
}

// Activate moves a scheduled poll of run to active when its time comes; false when it is no
// longer that (unscheduled, another run).
func (s *Store) Activate(ctx context.Context, org, id uuid.UUID, run int32, now time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE polls SET status = 'active', started_at = $4, updated_at = $4
		WHERE organization_id = $1 AND id = $2 AND run = $3 AND status = 'scheduled'`, org, id, run, now)
	if err != nil {
		return false, fmt.Errorf("activate poll: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Resolved records that the whole audience is stored, with its size.
func (s *Store) Resolved(ctx context.Context, org, id uuid.UUID) (int32, error) {
	var n int32
	err := s.pool.QueryRow(ctx, `UPDATE polls SET audience_resolved = true,
			participant_count = (SELECT count(*) FROM participants WHERE poll_id = $2)
		WHERE organization_id = $1 AND id = $2 RETURNING participant_count`, org, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("poll audience resolved: %w", err)
	}
	return n, nil
}

// SetHeld records the credits held for the poll (the hold's id is the poll's).
func (s *Store) SetHeld(ctx context.Context, org, id uuid.UUID, credits int32) error {
	if _, err := s.pool.Exec(ctx, `UPDATE polls SET held_credits = $3 WHERE organization_id = $1 AND id = $2`, org, id, credits); err != nil {
		return fmt.Errorf("poll hold: %w", err)
	}
	return nil
}

// Fail completes a poll that could not start (no credits, segment deleted) with the reason;
// false when it was no longer active or paused.
func (s *Store) Fail(ctx context.Context, tx pgx.Tx, org, id uuid.UUID, reason string, now time.Time) (bool, error) {
	tag, err := tx.Exec(ctx, `UPDATE polls SET status = 'completed', failure_reason = $3, completed_at = $4, updated_at = $4
		WHERE organization_id = $1 AND id = $2 AND status IN ('active', 'paused')`, org, id, reason, now)
	if err != nil {
		return false, fmt.Errorf("fail poll: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
