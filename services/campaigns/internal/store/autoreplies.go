package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Statuses of an auto-reply.
const (
	AutoReplyQueued  = "queued"
	AutoReplySent    = "sent"
	AutoReplySkipped = "skipped"
	AutoReplyFailed  = "failed"
)

// ErrNoAutoReply is an inbound message with no auto-reply recorded.
var ErrNoAutoReply = errors.New("auto-reply not found")

// AutoReply is a campaign's automatic answer to one inbound message.
type AutoReply struct {
	InboundID  uuid.UUID
	OrgID      uuid.UUID
	CampaignID uuid.UUID
	Phone      string
	AnswerKey  string
	Body       string
	Status     string
	// OurNumber is the number (E.164) the contact texted ("" when not recorded).
	OurNumber string
	// FromPhoneNumberID is the campaign's sending number and Pool its number pool (read with
	// the answer).
	FromPhoneNumberID *uuid.UUID
	Pool              []uuid.UUID
}

// AddAutoReply records a queued answer inside tx. It reports false, storing nothing, when the
// inbound message already has an answer or the contact already had this one of the campaign.
func (s *Store) AddAutoReply(ctx context.Context, tx pgx.Tx, r AutoReply) (bool, error) {
	tag, err := tx.Exec(ctx, `
		INSERT INTO auto_replies (inbound_message_id, organization_id, campaign_id, phone, answer_key, body, our_number)
		VALUES ($1, $2, $3, $4, $5, $6, nullif($7, '')) ON CONFLICT DO NOTHING`,
		r.InboundID, r.OrgID, r.CampaignID, r.Phone, r.AnswerKey, r.Body, r.OurNumber)
	if err != nil {
		return false, fmt.Errorf("add auto-reply: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// AutoReply returns the answer to org's inbound message, or ErrNoAutoReply.
func (s *Store) AutoReply(ctx context.Context, org, inbound uuid.UUID) (AutoReply, error) {
	var r AutoReply
	err := s.pool.QueryRow(ctx, `
		SELECT a.inbound_message_id, a.organization_id, a.campaign_id, a.phone, a.answer_key, a.body, a.status,
			coalesce(a.our_number, ''), c.from_phone_number_id, c.from_phone_number_ids
		FROM auto_replies a JOIN campaigns c ON c.id = a.campaign_id AND c.organization_id = a.organization_id
		WHERE a.organization_id = $1 AND a.inbound_message_id = $2`, org, inbound).
		Scan(&r.InboundID, &r.OrgID, &r.CampaignID, &r.Phone, &r.AnswerKey, &r.Body, &r.Status, &r.OurNumber, &r.FromPhoneNumberID, &r.Pool)
	if errors.Is(err, pgx.ErrNoRows) {
		return AutoReply{}, ErrNoAutoReply
	}
	if err != nil {
		return AutoReply{}, fmt.Errorf("read auto-reply: %w", err)
	}
	return r, nil
}

// SettleAutoReply records what became of a queued answer: sent (messageID), skipped or failed
// (reason). An answer already settled is left as it is.
func (s *Store) SettleAutoReply(ctx context.Context, org, inbound uuid.UUID, status, reason string, messageID *uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE auto_replies SET status = $3, reason = nullif($4, ''), message_id = $5, updated_at = now()
		WHERE organization_id = $1 AND inbound_message_id = $2 AND status = 'queued'`,
		org, inbound, status, reason, messageID)
	if err != nil {
		return fmt.Errorf("settle auto-reply: %w", err)
	}
	return nil
}
