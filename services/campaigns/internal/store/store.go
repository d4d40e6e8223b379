// Package store is the campaigns schema: campaign rows with their counters, and the
// recipients of each send keyed by (campaign, contact). Every query filters on the
// organization; another organization's campaign is ErrNotFound, as a missing one.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chorus-sms/chorus/pkg/audience"
	"github.com/chorus-sms/chorus/pkg/orgtable"
)

// Campaign statuses (spec section 3).
const (
	StatusDraft     = "draft"
	StatusScheduled = "scheduled"
	StatusPending   = "pending"
	StatusQueued    = "queued"
	StatusSending   = "sending"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusPaused    = "paused"
)

// ErrNotFound is a campaign that does not exist in the organization.
var ErrNotFound = errors.New("campaign not found")

// ErrInvalidState is a move the campaign's status does not allow; the error's text says which.
var ErrInvalidState = errors.New("invalid state")

// ContactFilter is a campaign's ad-hoc audience, stored as JSON.
type ContactFilter = audience.Filter

// FaqReply is one question and its auto-reply.
type FaqReply struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// Campaign is one row.
type Campaign struct {
	ID                uuid.UUID
	OrgID             uuid.UUID
	Name              string
	Status            string
	PausedFrom        *string
	Channel           string
	Message           string
	MediaURL          *string
	SegmentID         *uuid.UUID
	ContactFilter     *ContactFilter
	FromPhoneNumberID *uuid.UUID
	// FromPhoneNumberIDs is the campaign's number pool (nil for none: it sends from
	// FromPhoneNumberID alone, which is the pool's first number otherwise).
	FromPhoneNumberIDs []uuid.UUID
	ScheduledFor       *time.Time
	Timezone           *string
	ForceRoute         string
	NormalizeText      bool
	IsAbTest           bool
	VariantA           *string
	VariantB           *string
	AbTestWaitMinutes  int32
	AutoReplyEnabled   bool
	YesResponse        *string
	NoResponse         *string
	FaqReplies         []FaqReply
	Submission         int32
	TotalCount         int32
	SentCount          int32
	FailedCount        int32
	WithdrawnCount     int32 // withdrawn before the carrier saw them: neither sent nor failed
	SkippedCount       int32 // skipped for the organization's frequency cap: nor withdrawn
	DeliveredCount     int32
	ReplyCount         int32
	ClickCount         int32 // follows of the campaign's short links
	HeldCredits        int32
	// Unsent counts the recipients given no message, by reason (UnsentEmptyText,
	// UnsentTooLong), once the audience is resolved; they are in FailedCount too.
	Unsent           map[string]int32
	AudienceResolved bool
	FailureReason    *string
	CreatedAt        time.Time
	UpdatedAt        time.Time
	StartedAt        *time.Time
	CompletedAt      *time.Time
	CanceledAt       *time.Time
}

// QueuedCount is the recipients not yet sent, failed, withdrawn or skipped; none once the
// campaign is over.
func (c *Campaign) QueuedCount() int32 {
	if c.Status == StatusCompleted || c.Status == StatusFailed {
		return 0
	}
	return max(0, c.TotalCount-c.SentCount-c.FailedCount-c.WithdrawnCount-c.SkippedCount)
}

// DeliveryRate is delivered / sent × 100 (0 before anything is sent).
func (c *Campaign) DeliveryRate() float64 {
	if c.SentCount == 0 {
		return 0
	}
	return float64(c.DeliveredCount) / float64(c.SentCount) * 100
}

const columns = `id, organization_id, name, status, paused_from, channel, message, media_url, segment_id,
	contact_filter, from_phone_number_id, from_phone_number_ids, scheduled_for, timezone, force_route, normalize_text, is_ab_test,
	message_variant_a, message_variant_b, ab_test_wait_minutes, auto_reply_enabled, yes_response, no_response,
	faq_replies, submission, total_count, sent_count, failed_count, withdrawn_count, skipped_count, delivered_count, reply_count, click_count, held_credits,
	unsent, audience_resolved, failure_reason, created_at, updated_at, started_at, completed_at, canceled_at`

// columnCount is how many columns there are.
var columnCount = len((&Campaign{}).fields())

func (c *Campaign) fields() []any {
	return []any{&c.ID, &c.OrgID, &c.Name, &c.Status, &c.PausedFrom, &c.Channel, &c.Message, &c.MediaURL, &c.SegmentID,
		&c.ContactFilter, &c.FromPhoneNumberID, &c.FromPhoneNumberIDs, &c.ScheduledFor, &c.Timezone, &c.ForceRoute, &c.NormalizeText, &c.IsAbTest,
		&c.VariantA, &c.VariantB, &c.AbTestWaitMinutes, &c.AutoReplyEnabled, &c.YesResponse, &c.NoResponse,
		&c.FaqReplies, &c.Submission, &c.TotalCount, &c.SentCount, &c.FailedCount, &c.WithdrawnCount, &c.SkippedCount, &c.DeliveredCount, &c.ReplyCount, &c.ClickCount, &c.HeldCredits,
		&c.Unsent, &c.AudienceResolved, &c.FailureReason, &c.CreatedAt, &c.UpdatedAt, &c.StartedAt, &c.CompletedAt, &c.CanceledAt}
}

func scanCampaign(row pgx.Row) (Campaign, error) {
	var c Campaign
	err := row.Scan(c.fields()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return Campaign{}, ErrNotFound
	}
	if err != nil {
		return Campaign{}, fmt.Errorf("read campaign: %w", err)
	}
	if c.FaqReplies == nil {
		c.FaqReplies = []FaqReply{}
	}
	return c, nil
}

// Store reads and writes the campaigns schema; the campaigns table's reads (Get, GetTx,
// Lock, List) and InTx are its Table's.
type Store struct {
	*orgtable.Table[Campaign]
	pool *pgxpool.Pool
}

// New returns a Store over pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{Table: orgtable.New(pool, "campaigns", columns, scanCampaign), pool: pool}
}

// Insert stores a new campaign inside tx and announces it (campaign.changed).
func (s *Store) Insert(ctx context.Context, tx pgx.Tx, c *Campaign) error {
	_, err := tx.Exec(ctx, `INSERT INTO campaigns (`+columns+`) VALUES (`+placeholders(columnCount)+`)`, c.values()...)
	if err != nil {
		return fmt.Errorf("insert campaign: %w", err)
	}
	return announce(ctx, tx, c.OrgID, c.ID)
}

// Save writes every field of a campaign locked in tx (Lock), sets its updated_at and announces
// it (campaign.changed).
func (s *Store) Save(ctx context.Context, tx pgx.Tx, c *Campaign) error {
	c.UpdatedAt = time.Now()
	_, err := tx.Exec(ctx, `UPDATE campaigns SET (`+columns+`) = (`+placeholders(columnCount)+`) WHERE organization_id = $2 AND id = $1`, c.values()...)
	if err != nil {
		return fmt.Errorf("save campaign: %w", err)
	}
	return announce(ctx, tx, c.OrgID, c.ID)
}

func (c *Campaign) values() []any {
	faq := c.FaqReplies
	if faq == nil {
		faq = []FaqReply{}
	}
	unsent := c.Unsent
	if unsent == nil {
		unsent = map[string]int32{}
	}
	return []any{c.ID, c.OrgID, c.Name, c.Status, c.PausedFrom, c.Channel, c.Message, c.MediaURL, c.SegmentID,
		c.ContactFilter, c.FromPhoneNumberID, c.FromPhoneNumberIDs, c.ScheduledFor, c.Timezone, c.ForceRoute, c.NormalizeText, c.IsAbTest,
		c.VariantA, c.VariantB, c.AbTestWaitMinutes, c.AutoReplyEnabled, c.YesResponse, c.NoResponse,
		faq, c.Submission, c.TotalCount, c.SentCount, c.FailedCount, c.WithdrawnCount, c.SkippedCount, c.DeliveredCount, c.ReplyCount, c.ClickCount, c.HeldCredits,
		unsent, c.AudienceResolved, c.FailureReason, c.CreatedAt, c.UpdatedAt, c.StartedAt, c.CompletedAt, c.CanceledAt}
}

func placeholders(n int) string {
	s := ""
	for i := 1; i <= n; i++ {
		if i > 1 {
			s += ", "
		}
		s += fmt.Sprintf("$%d", i)
	}
	return s
}
