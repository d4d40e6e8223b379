package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Queued is a message as the dispatcher takes it off the queue: the row, its source's state
// and its sending number's own rate.
type Queued struct {
	Message
	SourceState string // SourceActive, SourceHeld, SourcePaused or SourceCanceled
	NumberMPS   int    // the sending number's own rate; 0: the default
}

// QueuedMessages reads messages for dispatch in one statement, with their sources' states and
// their numbers' rates; a missing id (deleted with its contact) is absent from the map.
func (s *Store) QueuedMessages(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]Queued, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+messageColumns+`,
			coalesce((SELECT ss.state FROM source_states ss WHERE ss.organization_id = messages.organization_id
				AND ss.source_kind = messages.source_kind AND ss.source_id = messages.source_id), 'active'),
			coalesce((SELECT p.mps FROM phone_numbers p WHERE p.number = messages.our_number), 0)
		FROM messages WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read queued messages: %w", err)
	}
	defer rows.Close()
	out := make(map[uuid.UUID]Queued, len(ids))
	for rows.Next() {
		var q Queued
		m, err := scanMessage(rows, &q.SourceState, &q.NumberMPS)
		if err != nil {
			return nil, fmt.Errorf("read queued messages: %w", err)
		}
		q.Message = m
		out[m.ID] = q
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read queued messages: %w", err)
	}
	return out, nil
}

// ClaimRequest is one message to claim and when its throttle let it go. OurNumber, when set,
// is the number it was read with: a message moved to another number since (its number left
// its source's rotation) is not claimed, so that it goes from its new number.
type ClaimRequest struct {
	ID           uuid.UUID
	DispatchedAt time.Time
	OurNumber    string
}

// ClaimMany is Claim for many messages in one statement and answers each request in order.
// A message named twice is claimed once: only its first request is answered true.
//
// Like the other batched statements on messages (AcceptMany, AdvanceStatusMany), it finds its
// rows by one primary key probe per id (a LATERAL subquery with LIMIT 1, which the planner
// cannot turn into another join), and the update joins only the rows found, with no condition
// of its own on messages. A condition on messages in a join with the batch let the planner,
// whose statistics may not know the rows (a new campaign's), believe it matched one row and
// scan the table once per message of the batch. The other two lock each row at its probe, in
// id order, so that two batches cannot deadlock.
func (s *Store) ClaimMany(ctx context.Context, reqs []ClaimRequest) ([]bool, error) {
	ids, at, numbers := make([]uuid.UUID, len(reqs)), make([]time.Time, len(reqs)), make([]string, len(reqs))
	for i, r := range reqs {
		ids[i], at[i], numbers[i] = r.ID, r.DispatchedAt, r.OurNumber
	}
	rows, err := s.pool.Query(ctx, `WITH input AS (
			SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[]) AS t(id, dispatched_at, our_number)
		), probed AS (
			SELECT m.ctid AS row, m.status, i.dispatched_at, i.our_number FROM (SELECT * FROM input ORDER BY id) i
			CROSS JOIN LATERAL (SELECT ctid, status FROM messages
				WHERE id = i.id AND status = 'queued' AND (i.our_number = '' OR our_number = i.our_number) LIMIT 1) m
		), claimed AS (
			-- Each row found is updated where the probe found it (its ctid), and checked again as
			-- it is (a concurrent update is waited for and its result checked), by join
			-- conditions, which leave the planner's estimate of messages alone.
			UPDATE messages SET status = 'sending', status_at = now(), dispatched_at = p.dispatched_at,
				thread_at = CASE WHEN source_kind = 'system' THEN thread_at ELSE now() END
			FROM probed p
			WHERE messages.ctid = p.row AND messages.status = p.status AND (p.our_number = '' OR messages.our_number = p.our_number)
				-- A held, paused or canceled source hands nothing more to the carrier from the moment
				-- its state is committed.
				AND NOT EXISTS (SELECT 1 FROM source_states ss WHERE ss.organization_id = messages.organization_id
					AND ss.source_kind = messages.source_kind AND ss.source_id = messages.source_id)
			RETURNING messages.id, organization_id, contact_phone, body, thread_at
		), thread AS (
			INSERT INTO conversations AS c (organization_id, phone, last_message, last_message_at, last_direction, unread_count)
			SELECT DISTINCT ON (organization_id, contact_phone) organization_id, contact_phone, body, thread_at, 'outgoing', 0
			FROM claimed ORDER BY organization_id, contact_phone, thread_at DESC, id DESC
			`+conversationUpsert+`
		)
		SELECT id FROM claimed`, ids, at, numbers)
	if err != nil {
		return nil, fmt.Errorf("claim messages: %w", err)
	}
	claimed, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("claim messages: %w", err)
	}
	taken := make(map[uuid.UUID]bool, len(claimed))
	for _, id := range claimed {
		taken[id] = true
	}
	out := make([]bool, len(reqs))
	for i, r := range reqs {
		out[i] = taken[r.ID]
		delete(taken, r.ID)
	}
	return out, nil
}

// Acceptance is the carrier's acceptance of a claimed message. Settled says its credits need
// nothing more from billing (posted to its campaign's hold before it was claimed, or none), so
// it is recorded settled in the same statement.
type Acceptance struct {
	ID                uuid.UUID
	ProviderMessageID string
	// DispatchedAt, when set, records when the throttle let the message go (a reply's).
	DispatchedAt *time.Time
	Settled      bool
}

// AcceptMany moves claimed messages to "sent" under the carriers' ids inside tx, in one
// statement, and returns those it moved (statuses only move forward: one a callback already
// moved on is left as it is).
func (s *Store) AcceptMany(ctx context.Context, tx pgx.Tx, accs []Acceptance, at time.Time) (map[uuid.UUID]bool, error) {
	ids, pids, settled := make([]uuid.UUID, len(accs)), make([]string, len(accs)), make([]bool, len(accs))
	dispatched := make([]*time.Time, len(accs))
	for i, a := range accs {
		ids[i], pids[i], settled[i], dispatched[i] = a.ID, a.ProviderMessageID, a.Settled, a.DispatchedAt
	}
	rows, err := tx.Query(ctx, `WITH input AS (
			SELECT * FROM unnest($1::uuid[], $2::text[], $3::boolean[], $5::timestamptz[]) AS t(id, provider_message_id, settled, dispatched_at)
		), locked AS (
			-- One probe and lock per id, in id order (see ClaimMany).
			SELECT m.id, i.provider_message_id, i.settled, i.dispatched_at FROM (SELECT * FROM input ORDER BY id) i
			CROSS JOIN LATERAL (SELECT id FROM messages WHERE id = i.id AND status IN ('queued', 'sending')
				LIMIT 1 FOR UPDATE) m
		)
		UPDATE messages m SET status = 'sent',
			provider_message_id = coalesce(m.provider_message_id, nullif(l.provider_message_id, '')),
			sent_at = coalesce(m.sent_at, $4), status_at = $4, dispatched_at = coalesce(m.dispatched_at, l.dispatched_at),
			settled_at = CASE WHEN l.settled AND m.billable AND m.hold_id IS NOT NULL THEN coalesce(m.settled_at, $4) ELSE m.settled_at END
		FROM locked l
		WHERE m.id = l.id
		RETURNING m.id`, ids, pids, settled, at, dispatched)
	if err != nil {
		return nil, fmt.Errorf("record accepted messages: %w", err)
	}
	moved, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("record accepted messages: %w", err)
	}
	out := make(map[uuid.UUID]bool, len(moved))
	for _, id := range moved {
		out[id] = true
	}
	return out, nil
}

// HandOffInFlight says whether a message to phone may be on its way to the carrier: one of
// the organization's outgoing messages to it (not a keyword's answer) is "sending", and was
// let go by its throttle after since or, a reply's, has no recorded dispatch time yet. A
// "sending" message whose outcome was lost stays so too, until since passes its dispatch.
func (s *Store) HandOffInFlight(ctx context.Context, org uuid.UUID, phone string, since time.Time) (bool, error) {
	var inFlight bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM messages
		WHERE organization_id = $1 AND contact_phone = $2 AND direction = 'outgoing' AND status = 'sending'
			AND source_kind <> 'system' AND (dispatched_at IS NULL OR dispatched_at > $3))`,
		org, phone, since).Scan(&inFlight)
	if err != nil {
		return false, fmt.Errorf("look for hand-offs in flight: %w", err)
	}
	return inFlight, nil
}
