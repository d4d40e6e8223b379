package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/outbox"
)

// InsertBulk stores a bulk batch: msgs, all queued, of one source and alike but for their
// recipient, text, route (SMS or MMS), price (BulkAlike) and, from a number pool, sending
// number, as one row per sending number whose messages ExpandBulk creates once due (the
// earliest time one of them may go), and counts them to their numbers' share of the source
// (source_numbers), in one transaction. A batch whose dedupe keys were all handed over before
// (a retry, whose numbers may have been picked otherwise) is neither stored nor counted again:
// its messages exist, or are about to, and the pool's balance must not count them twice.
func (s *Store) InsertBulk(ctx context.Context, msgs []*Message, due time.Time) error {
	if len(msgs) == 0 {
		return nil
	}
	order, byNumber := groupByNumber(msgs)
	return s.InTx(ctx, func(tx pgx.Tx) error {
		if fresh, err := recordHandoff(ctx, tx, msgs); err != nil || !fresh {
			return err // or handed over before
		}
		for _, number := range order {
			if err := insertBulkRow(ctx, tx, byNumber[number], due); err != nil {
				return err
			}
		}
		return countAssigned(ctx, tx, order, byNumber)
	})
}

// recordHandoff records msgs, all of one source, by their keys' digest in tx, and reports
// whether they are new: false is a retry of a batch or pick recorded before.
func recordHandoff(ctx context.Context, tx pgx.Tx, msgs []*Message) (bool, error) {
	first := msgs[0]
	tag, err := tx.Exec(ctx, `INSERT INTO bulk_handoffs (organization_id, source_kind, source_id, keys_digest)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, first.OrgID, first.SourceKind, first.SourceID, keysDigest(msgs))
	if err != nil {
		return false, fmt.Errorf("record bulk hand-off: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// keysDigest is a digest of msgs' dedupe keys, whatever their order: what a retried batch
// shares with the first try (its message ids and numbers are new).
func keysDigest(msgs []*Message) []byte {
	keys := make([]string, len(msgs))
	for i, m := range msgs {
		keys[i] = m.DedupeKey
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		// Length-prefixed, so that no two lists of keys write the same bytes.
		h.Write(binary.AppendUvarint(nil, uint64(len(k))))
		h.Write([]byte(k))
	}
	return h.Sum(nil)
}

// insertBulkRow stores msgs, all of one sending number, as one bulk batch row.
func insertBulkRow(ctx context.Context, tx pgx.Tx, msgs []*Message, due time.Time) error {
	n := len(msgs)
	ids, phones, bodies, keys, zones, credits := make([]uuid.UUID, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]int32, n)
	mms, states := make([]bool, n), make([]string, n)
	for i, m := range msgs {
		ids[i], phones[i], bodies[i], keys[i], zones[i], credits[i] = m.ID, m.ContactPhone, m.Body, m.DedupeKey, m.RecipientTimezone, m.Credits
		mms[i], states[i] = m.IsMMS, m.RecipientState
	}
	m := msgs[0]
	_, err := tx.Exec(ctx, `INSERT INTO bulk_batches (organization_id, source_kind, source_id, due_at, created_at, our_number,
			phone_number_id, media_urls, is_mms, provider, billable, hold_id, quiet_hours_timezone,
			ids, contact_phones, bodies, credits, dedupe_keys, recipient_timezones, mms, recipient_states)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, nullif($12, ''), nullif($13, ''), $14, $15, $16, $17, $18, $19, $20, $21)`,
		m.OrgID, m.SourceKind, m.SourceID, due, m.CreatedAt, m.OurNumber, m.PhoneNumberID, append([]string{}, m.MediaURLs...),
		m.IsMMS, m.Provider, m.Billable, m.HoldID, m.QuietTimezone, ids, phones, bodies, credits, keys, zones, mms, states)
	if err != nil {
		return fmt.Errorf("store bulk batch: %w", err)
	}
	return nil
}

// BulkAlike reports whether m can share a bulk batch with first: the same source, sending
// number, media, hold and quiet-hours zone, which the batch's row holds once; "" when it can,
// else the field that differs.
func BulkAlike(first, m *Message) string {
	switch {
	case m.SourceKind != first.SourceKind:
		return "sourceKind"
	case m.SourceID != first.SourceID:
		return "sourceId"
	case m.OurNumber != first.OurNumber:
		return "fromPhoneNumberId"
	case !slices.Equal(m.MediaURLs, first.MediaURLs):
		return "mediaUrls"
	case m.HoldID != first.HoldID:
		return "holdId"
	case m.QuietTimezone != first.QuietTimezone:
		return "quietHoursTimezone"
	}
	return ""
}

// bulkInput is the CTE input of insertOutgoing (outgoingInput's columns) read from the batch
// the CTE taken deleted.
const bulkInput = `input` + outgoingInput + ` AS (
		SELECT t.id, b.organization_id, t.contact_phone, b.our_number, coalesce(b.phone_number_id::text, ''), t.body,
			to_jsonb(b.media_urls)::text, coalesce(t.mms, b.is_mms), 'queued'::text, b.provider, t.credits, b.billable, coalesce(b.hold_id, ''),
			b.source_kind, b.source_id, t.dedupe_key, coalesce(b.quiet_hours_timezone, ''), b.created_at, t.recipient_timezone,
			coalesce(t.recipient_state, '')
		FROM taken b, unnest(b.ids, b.contact_phones, b.bodies, b.credits, b.dedupe_keys, b.recipient_timezones, b.mms, b.recipient_states)
			AS t(id, contact_phone, body, credits, dedupe_key, recipient_timezone, mms, recipient_state))`

// TakenBulk is a bulk batch ExpandBulk took: its id, its organization, its sending number,
// and the ids of the messages it created.
type TakenBulk struct {
	ID      int64
	OrgID   uuid.UUID
	Number  string
	Created []uuid.UUID
}

// ExpandBulk takes the earliest due bulk batch whose source is neither held nor paused and
// whose sending number is not one of skip, inside tx, and creates its messages (a message
// whose dedupe key is taken is not: a batch handed twice), or drops it when its source was
// canceled. It returns the batch taken (nil for none due), whose
// created messages are to be queued in tx, also with an error once a batch was taken, so that
// the caller can set that batch aside (DeferBulk); two expanders take different batches.
func (s *Store) ExpandBulk(ctx context.Context, tx pgx.Tx, skip []string) (*TakenBulk, error) {
	if skip == nil {
		skip = []string{} // <> ALL(NULL) would match nothing
	}
	var b TakenBulk
	var state string
	err := tx.QueryRow(ctx, `
		SELECT b.id, b.organization_id, b.our_number, coalesce(st.state, '') FROM bulk_batches b
		LEFT JOIN source_states st ON st.organization_id = b.organization_id AND st.source_kind = b.source_kind
			AND st.source_id = b.source_id
		WHERE b.due_at <= now() AND coalesce(st.state, '') NOT IN ('held', 'paused') AND b.our_number <> ALL($1)
		ORDER BY b.due_at, b.id LIMIT 1 FOR UPDATE OF b SKIP LOCKED`, skip).Scan(&b.ID, &b.OrgID, &b.Number, &state)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("take bulk batch: %w", err)
	}
	if state == SourceCanceled {
		if _, err := tx.Exec(ctx, `DELETE FROM bulk_batches WHERE id = $1`, b.ID); err != nil {
			return &b, fmt.Errorf("drop canceled bulk batch %d: %w", b.ID, err)
		}
		return &b, nil
	}
	rows, err := tx.Query(ctx, `WITH taken AS (DELETE FROM bulk_batches WHERE id = $1 RETURNING *), `+bulkInput+insertOutgoing, b.ID)
	if err != nil {
		return &b, fmt.Errorf("expand bulk batch %d: %w", b.ID, err)
	}
	stored, err := collectCreated(rows)
	if err != nil {
		return &b, fmt.Errorf("expand bulk batch %d: %w", b.ID, err)
	}
	if err := outbox.EnqueueMany(ctx, tx, createdEvents(stored)); err != nil {
		return &b, err
	}
	b.Created = make([]uuid.UUID, len(stored))
	for i, m := range stored {
		b.Created[i] = m.ID
	}
	return &b, nil
}

// DeferBulk sets a batch that failed to expand aside for wait, so that the batches behind it
// go on.
func (s *Store) DeferBulk(ctx context.Context, id int64, wait time.Duration) error {
	if _, err := s.pool.Exec(ctx, `UPDATE bulk_batches SET due_at = now() + $2 WHERE id = $1`, id, wait); err != nil {
		return fmt.Errorf("defer bulk batch %d: %w", id, err)
	}
	return nil
}
