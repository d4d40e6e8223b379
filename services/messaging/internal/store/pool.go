package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// A source's numbers (source_numbers): the number pool of a campaign or poll, or its one
// number, with what each was given and sent, and the numbers the carrier's refusals took out
// of the source's rotation.

// SourceNumber is one sending number of a bulk source.
type SourceNumber struct {
	Number        string
	PhoneNumberID uuid.UUID
	// Assigned counts the source's messages given the number, each once (a retried bulk
	// batch is not counted again: InsertBulk), which weighs the pool's balance.
	Assigned int
	// Sent counts the source's messages the carrier took from the number.
	Sent          int
	Removed       bool
	RemovedReason string
}

// groupByNumber groups msgs by sending number, the numbers in the order first met.
func groupByNumber(msgs []*Message) ([]string, map[string][]*Message) {
	var order []string
	byNumber := map[string][]*Message{}
	for _, m := range msgs {
		if _, ok := byNumber[m.OurNumber]; !ok {
			order = append(order, m.OurNumber)
		}
		byNumber[m.OurNumber] = append(byNumber[m.OurNumber], m)
	}
	return order, byNumber
}

// CountAssigned counts msgs, given their numbers but sent later one by one (a poll's
// participants), to their numbers' share of their source, once: a pick whose keys (each
// message's DedupeKey) were all counted before, a retry of the same participants (a start job
// run again, a call whose answer was lost), counts nothing again.
func (s *Store) CountAssigned(ctx context.Context, msgs []*Message) error {
	if len(msgs) == 0 {
		return nil
	}
	order, byNumber := groupByNumber(msgs)
	return s.InTx(ctx, func(tx pgx.Tx) error {
		if fresh, err := recordHandoff(ctx, tx, msgs); err != nil || !fresh {
			return err
		}
		return countAssigned(ctx, tx, order, byNumber)
	})
}

// countAssigned adds the messages of each number of byNumber to the number's share of their
// source, inside tx (a number without an id, not one of the organization's, is not counted).
func countAssigned(ctx context.Context, tx pgx.Tx, order []string, byNumber map[string][]*Message) error {
	first := byNumber[order[0]][0]
	var numbers []string
	var ids []uuid.UUID
	var counts []int32
	for _, number := range order {
		if m := byNumber[number][0]; m.PhoneNumberID != nil {
			numbers, ids, counts = append(numbers, number), append(ids, *m.PhoneNumberID), append(counts, int32(len(byNumber[number])))
		}
	}
	if len(numbers) == 0 {
		return nil
	}
	// Sorted by number, so that two batches of one source lock its rows in the same order.
	_, err := tx.Exec(ctx, `INSERT INTO source_numbers AS sn (organization_id, source_kind, source_id, our_number, phone_number_id, assigned)
		SELECT $1, $2, $3, t.number, t.id, t.n FROM unnest($4::text[], $5::uuid[], $6::int[]) AS t(number, id, n) ORDER BY t.number
		ON CONFLICT (organization_id, source_kind, source_id, our_number) DO UPDATE SET assigned = sn.assigned + excluded.assigned`,
		first.OrgID, first.SourceKind, first.SourceID, numbers, ids, counts)
	if err != nil {
		return fmt.Errorf("count bulk batch: %w", err)
	}
	return nil
}

// CountSent counts msgs, which the carrier just took (each once: they left queued or
// sending in tx), to their bulk sources' numbers inside tx; messages of no campaign or poll
// count for nothing. The rows are locked in key order, so two counts cannot deadlock.
func (s *Store) CountSent(ctx context.Context, tx pgx.Tx, msgs []Message) error {
	var orgs []uuid.UUID
	var kinds, ids, numbers []string
	for _, m := range msgs {
		if m.SourceKind == SourceCampaign || m.SourceKind == SourcePoll {
			orgs, kinds, ids, numbers = append(orgs, m.OrgID), append(kinds, m.SourceKind), append(ids, m.SourceID), append(numbers, m.OurNumber)
		}
	}
	if len(orgs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `WITH per_number AS (
			SELECT org, kind, id, number, count(*)::int AS n FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[]) AS t(org, kind, id, number)
			GROUP BY 1, 2, 3, 4
		), locked AS (
			SELECT sn.organization_id, sn.source_kind, sn.source_id, sn.our_number, p.n FROM source_numbers sn
			JOIN per_number p ON sn.organization_id = p.org AND sn.source_kind = p.kind AND sn.source_id = p.id AND sn.our_number = p.number
			ORDER BY 1, 2, 3, 4 FOR UPDATE OF sn
		)
		UPDATE source_numbers sn SET sent = sn.sent + l.n FROM locked l
		WHERE sn.organization_id = l.organization_id AND sn.source_kind = l.source_kind AND sn.source_id = l.source_id AND sn.our_number = l.our_number`,
		orgs, kinds, ids, numbers)
	if err != nil {
		return fmt.Errorf("count sent messages to their numbers: %w", err)
	}
	return nil
}

// SourceNumbers lists the numbers of a source, in the order they were first given messages.
func (s *Store) SourceNumbers(ctx context.Context, org uuid.UUID, kind, id string) ([]SourceNumber, error) {
	rows, err := s.pool.Query(ctx, `SELECT our_number, phone_number_id, assigned, sent, removed_at IS NOT NULL, coalesce(removed_reason, '')
		FROM source_numbers WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3 ORDER BY created_at, our_number`, org, kind, id)
	if err != nil {
		return nil, fmt.Errorf("source numbers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SourceNumber, error) {
		var n SourceNumber
		err := row.Scan(&n.Number, &n.PhoneNumberID, &n.Assigned, &n.Sent, &n.Removed, &n.RemovedReason)
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("source numbers: %w", err)
	}
	return out, nil
}

// LastSenders is, for each of phones, the number of pool that last exchanged a message with
// it (either way), "" for none: one probe of the thread index (organization, phone, newest
// first) per phone, read back to the first message of a pool number.
func (s *Store) LastSenders(ctx context.Context, org uuid.UUID, pool, phones []string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT coalesce((SELECT m.our_number FROM messages m
			WHERE m.organization_id = $1 AND m.contact_phone = t.phone AND m.our_number = ANY($2)
			ORDER BY m.created_at DESC, m.id DESC LIMIT 1), '')
		FROM unnest($3::text[]) WITH ORDINALITY AS t(phone, i) ORDER BY t.i`, org, pool, phones)
	if err != nil {
		return nil, fmt.Errorf("last senders: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("last senders: %w", err)
	}
	return out, nil
}

// LeaveRotation takes number out of a source's rotation for reason (the carrier refused it)
// and moves the source's queued messages and bulk batches of that number to the numbers left,
// spread over them, after putting requeue (the refused message, claimed; uuid.Nil for none)
// back in the queue; with none left nothing moves and requeue stays as it is. It returns how
// many numbers are left.
func (s *Store) LeaveRotation(ctx context.Context, org uuid.UUID, kind, id, number, reason string, requeue uuid.UUID) (left int, err error) {
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE source_numbers SET removed_at = now(), removed_reason = $5
			WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3 AND our_number = $4 AND removed_at IS NULL`,
			org, kind, id, number, reason); err != nil {
			return fmt.Errorf("remove number from rotation: %w", err)
		}
		var numbers []string
		var ids []uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(our_number ORDER BY our_number), '{}'), coalesce(array_agg(phone_number_id ORDER BY our_number), '{}')
			FROM source_numbers WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3 AND removed_at IS NULL`,
			org, kind, id).Scan(&numbers, &ids); err != nil {
			return fmt.Errorf("numbers left in rotation: %w", err)
		}
		if left = len(numbers); left == 0 {
			return nil
		}
		if requeue != uuid.Nil {
			if _, err := tx.Exec(ctx, `UPDATE messages SET status = 'queued' WHERE id = $1 AND status = 'sending'`, requeue); err != nil {
				return fmt.Errorf("requeue refused message: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE bulk_batches SET our_number = ($5::text[])[1 + id % $7], phone_number_id = ($6::uuid[])[1 + id % $7]
			WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3 AND our_number = $4`,
			org, kind, id, number, numbers, ids, left); err != nil {
			return fmt.Errorf("move bulk batches off a removed number: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE messages SET our_number = ($5::text[])[1 + abs(hashtext(id::text) % $7)],
				phone_number_id = ($6::uuid[])[1 + abs(hashtext(id::text) % $7)]
			WHERE organization_id = $1 AND source_kind = $2 AND source_id = $3 AND our_number = $4 AND queued`,
			org, kind, id, number, numbers, ids, left); err != nil {
			return fmt.Errorf("move queued messages off a removed number: %w", err)
		}
		return nil
	})
	return left, err
}
