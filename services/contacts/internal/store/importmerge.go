package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RejectReason turns a row's merge error into the reason its rejected row gives (what a POST
// of the same fields would answer); false means the error is not about the row.
type RejectReason func(error) (string, bool)

// MergeImportBatch merges the next batch of an import's lines in one transaction and reports
// whether the import is finished. Rows no other row of the batch shares anything with are
// merged set-wise (setWise: inserted with the ids they were staged with, or merged into the
// one contact they match); the others go one by one, in line order, through the create path's
// own merge (createOrMergeTx) under a savepoint, so a row that cannot be merged is rejected
// with its reason and the batch goes on. Lookups of the phones the batch gave are queued in
// bulk. The batch's end line is committed with its effects, so a job run again resumes after
// it.
func (s *Store) MergeImportBatch(ctx context.Context, org, id uuid.UUID, q BulkLookupQueue, reason RejectReason) (done bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	var (
		status        string
		through, last int32
	)
	err = tx.QueryRow(ctx, `SELECT status, merged_through, total FROM contact_imports WHERE `+orgKey+` AND id = $2 FOR UPDATE`,
		org, id).Scan(&status, &through, &last)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil // deleted with its organization: nothing left to do
	}
	if err != nil {
		return false, fmt.Errorf("lock import: %w", err)
	}
	if status == ImportCompleted || status == ImportFailed {
		return true, nil
	}
	to := min(last, through+importBatch)
	b := importBatchRun{org: org, id: id, from: through + 1, to: to, reason: reason}
	if lost, err := b.stagingLost(ctx, tx); err != nil || lost {
		if lost {
			err = failImport(ctx, tx, org, id)
		}
		if err == nil {
			err = tx.Commit(ctx)
		}
		return lost, err
	}
	if err := b.run(ctx, tx); err != nil {
		return false, err
	}
	queued, err := b.queueLookups(ctx, tx)
	if err != nil {
		return false, err
	}
	if queued {
		if err := q.EnqueueLookupBatchTx(ctx, tx, org, id, b.from); err != nil {
			return false, err
		}
	}
	done = to >= last
	_, err = tx.Exec(ctx, `
		UPDATE contact_imports SET merged_through = $3, processed = processed + $4, created = created + $5,
			merged = merged + $6, rejected = rejected + $7,
			status = CASE WHEN $8 THEN 'completed' ELSE 'running' END,
			completed_at = CASE WHEN $8 THEN now() END
		WHERE `+orgKey+` AND id = $2`,
		org, id, to, b.created+b.merged+b.rejected, b.created, b.merged, b.rejected, done)
	if err != nil {
		return false, fmt.Errorf("record import progress: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("commit import batch: %w", err)
	}
	return done, nil
}

// FailImport marks an import failed (its job gave up); the lines merged so far stay merged.
func (s *Store) FailImport(ctx context.Context, org, id uuid.UUID) error {
	return failImport(ctx, s.pool, org, id)
}

func failImport(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, org, id uuid.UUID) error {
	_, err := db.Exec(ctx, `
		UPDATE contact_imports SET status = 'failed', completed_at = now()
		WHERE `+orgKey+` AND id = $2 AND status IN ('queued', 'running')`, org, id)
	if err != nil {
		return fmt.Errorf("fail import: %w", err)
	}
	return nil
}

// importBatchRun is one batch of MergeImportBatch: lines from..to of an import.
type importBatchRun struct {
	org, id                   uuid.UUID
	from, to                  int32
	reason                    RejectReason
	created, merged, rejected int32
	queued                    int32            // lookups setWise queued
	lookups                   collectedLookups // lookups the rows merged one by one asked for
}

// stagingLost reports whether rows of the batch are missing from import_rows, which is
// unlogged (a file is written once and read once; logging it would double the import's writes):
// a crash of PostgreSQL empties it. The import then fails, and importing the file again
// completes it, changing nothing the lines merged before the crash changed.
func (b *importBatchRun) stagingLost(ctx context.Context, tx pgx.Tx) (bool, error) {
	var staged int32
	err := tx.QueryRow(ctx, `SELECT count(*) FROM import_rows WHERE `+orgKey+` AND import_id = $2 AND line BETWEEN $3 AND $4`,
		planEach, b.org, b.id, b.from, b.to).Scan(&staged)
	if err != nil {
		return false, fmt.Errorf("count staged import rows: %w", err)
	}
	return staged != b.to-b.from+1, nil
}

func (b *importBatchRun) run(ctx context.Context, tx pgx.Tx) error {
	if err := b.setWise(ctx, tx); err != nil {
		return err
	}
	rest, err := b.leftOver(ctx, tx)
	if err != nil {
		return err
	}
	for _, r := range rest {
		if err := b.mergeOne(ctx, tx, r); err != nil {
			return err
		}
	}
	// What is merged is done with; the rejected rows stay for GET .../rejected.
	_, err = tx.Exec(ctx, `
		DELETE FROM import_rows WHERE `+orgKey+` AND import_id = $2 AND line BETWEEN $3 AND $4 AND reason IS NULL`,
		planEach, b.org, b.id, b.from, b.to)
	if err != nil {
		return fmt.Errorf("clear merged import rows: %w", err)
	}
	return nil
}

// setWise merges, in one statement, the batch's rows that no other row of the batch touches:
// first in the batch with their phone and their email, and whose contact (the one holding the
// phone or the email as the batch starts; none, or one for both) no other row of the batch
// reaches by either key. Those that match no contact are inserted with the ids they were
// staged with; those that match one are merged into it by the create's rules (sent fields win,
// tags unioned in order, custom fields merged key by key; nothing written when nothing would
// change), under a lock of the contact taken in id order. A row whose merge would pass a limit,
// whose phone and email are two contacts', or that another row shares anything with, is left
// to leftOver's path, in line order. Each key is probed in the unique indexes, as a create's is.
// A merged row's staged contact id becomes its contact's, so leftOver passes it by. The
// lookups of the phones given are queued (import_lookups).
func (b *importBatchRun) setWise(ctx context.Context, tx pgx.Tx) error {
	err := tx.QueryRow(ctx, `
		WITH batch AS (
			SELECT r.*,
				row_number() OVER (PARTITION BY r.phone ORDER BY r.line) AS phone_rank,
				row_number() OVER (PARTITION BY lower(r.email) ORDER BY r.line) AS email_rank
			FROM import_rows r
			WHERE r.organization_id = (SELECT $1::uuid) AND r.import_id = $2 AND r.line BETWEEN $3 AND $4
				AND r.reason IS NULL
		), probed AS (
			SELECT b.*,
				(SELECT c.id FROM contacts c WHERE c.organization_id = b.organization_id AND c.phone = b.phone) AS pid,
				(SELECT c.id FROM contacts c WHERE c.organization_id = b.organization_id AND lower(c.email) = lower(b.email)) AS eid
			FROM batch b
		), reached AS (
			SELECT pid AS cid FROM probed WHERE pid IS NOT NULL
			UNION ALL
			SELECT eid FROM probed WHERE eid IS NOT NULL AND eid IS DISTINCT FROM pid
		), shared AS (
			SELECT cid FROM reached GROUP BY cid HAVING count(*) > 1
		), alone AS (
			SELECT p.*, coalesce(p.pid, p.eid) AS cid FROM probed p
			WHERE (p.phone IS NULL OR p.phone_rank = 1) AND (p.email IS NULL OR p.email_rank = 1)
				AND (p.pid IS NULL OR p.eid IS NULL OR p.pid = p.eid)
				AND NOT EXISTS (SELECT 1 FROM shared s WHERE s.cid = p.pid OR s.cid = p.eid)
		), created AS (
			INSERT INTO contacts (id, organization_id, phone, email, first_name, last_name, address, city,
				state, zip, tags, custom_fields, timezone)
			SELECT contact_id, organization_id, phone, email, coalesce(first_name, ''), coalesce(last_name, ''),
				coalesce(address, ''), coalesce(city, ''), coalesce(state, ''), coalesce(zip, ''),
				coalesce(tags, '{}'), coalesce(custom_fields, '{}'), coalesce(timezone, '')
			FROM alone WHERE cid IS NULL
			ORDER BY line
			ON CONFLICT DO NOTHING
			RETURNING organization_id, id, phone, updated_at
		), locked AS (
			SELECT a.line, a.phone AS sent_phone, a.email AS sent_email, a.first_name AS sent_first_name,
				a.last_name AS sent_last_name, a.address AS sent_address, a.city AS sent_city, a.state AS sent_state,
				a.zip AS sent_zip, a.timezone AS sent_timezone, a.tags AS sent_tags, a.custom_fields AS sent_custom_fields, c.*
			FROM alone a JOIN contacts c ON c.organization_id = a.organization_id AND c.id = a.cid
			ORDER BY c.id
			FOR UPDATE OF c
		), merged AS (
			SELECT l.*, n.*,
				cardinality(n.new_tags) <= greatest(`+maxTagsSQL+`, cardinality(l.tags)) AS tags_ok,
				(SELECT count(*) FROM jsonb_object_keys(n.new_custom_fields)) <= greatest(`+maxCustomFieldsSQL+`,
					(SELECT count(*) FROM jsonb_object_keys(l.custom_fields))) AS fields_ok
			FROM locked l CROSS JOIN LATERAL (SELECT
				coalesce(l.sent_phone, l.phone) AS new_phone, coalesce(l.sent_email, l.email) AS new_email,
				coalesce(l.sent_first_name, l.first_name) AS new_first_name, coalesce(l.sent_last_name, l.last_name) AS new_last_name,
				coalesce(l.sent_address, l.address) AS new_address, coalesce(l.sent_city, l.city) AS new_city,
				coalesce(l.sent_state, l.state) AS new_state, coalesce(l.sent_zip, l.zip) AS new_zip,
				coalesce(l.sent_timezone, l.timezone) AS new_timezone,
				l.tags || ARRAY(SELECT t FROM unnest(coalesce(l.sent_tags, '{}')) WITH ORDINALITY AS u(t, n)
					WHERE t <> ALL (l.tags) ORDER BY u.n) AS new_tags,
				l.custom_fields || coalesce(l.sent_custom_fields, '{}') AS new_custom_fields) n
		), mergeable AS (
			SELECT * FROM merged WHERE tags_ok AND fields_ok
		), updated AS (
			UPDATE contacts c SET phone = m.new_phone, email = m.new_email, first_name = m.new_first_name,
				last_name = m.new_last_name, address = m.new_address, city = m.new_city, state = m.new_state,
				zip = m.new_zip, timezone = m.new_timezone, tags = m.new_tags, custom_fields = m.new_custom_fields,
				is_textable = CASE WHEN m.new_phone IS DISTINCT FROM m.phone THEN NULL ELSE c.is_textable END,
				updated_at = now()
			FROM mergeable m
			WHERE c.organization_id = m.organization_id AND c.id = m.id
				AND (m.new_phone, m.new_email, m.new_first_name, m.new_last_name, m.new_address, m.new_city, m.new_state,
					m.new_zip, m.new_timezone, m.new_tags, m.new_custom_fields)
				IS DISTINCT FROM (m.phone, m.email, m.first_name, m.last_name, m.address, m.city, m.state,
					m.zip, m.timezone, m.tags, m.custom_fields)
			RETURNING c.organization_id, c.id, c.phone, c.updated_at, m.new_phone IS DISTINCT FROM m.phone AS phone_changed
		), marked AS (
			UPDATE import_rows r SET contact_id = m.id FROM mergeable m
			WHERE r.organization_id = (SELECT $1::uuid) AND r.import_id = $2 AND r.line = m.line
			RETURNING 1
		), queued AS (
			INSERT INTO import_lookups (organization_id, import_id, batch, contact_id, phone, phone_set_at)
			SELECT organization_id, $2, $3, id, phone, updated_at FROM created WHERE phone IS NOT NULL
			UNION ALL
			SELECT organization_id, $2, $3, id, phone, updated_at FROM updated WHERE phone_changed AND phone IS NOT NULL
			RETURNING 1
		)
		SELECT (SELECT count(*) FROM created), (SELECT count(*) FROM marked), (SELECT count(*) FROM queued)`,
		planEach, b.org, b.id, b.from, b.to).Scan(&b.created, &b.merged, &b.queued)
	if err != nil {
		return fmt.Errorf("merge imported rows: %w", err)
	}
	return nil
}

// The limits as SQL literals, for setWise.
var (
	maxTagsSQL         = strconv.Itoa(MaxTags)
	maxCustomFieldsSQL = strconv.Itoa(MaxCustomFields)
)

// queueLookups adds the lookups the rows merged one by one asked for to the batch's, and
// reports whether the batch queued any.
func (b *importBatchRun) queueLookups(ctx context.Context, tx pgx.Tx) (bool, error) {
	if len(b.lookups) == 0 {
		return b.queued > 0, nil
	}
	// A contact given two phones by two rows of the batch is looked up for the last; one
	// created or merged by setWise and given another phone by a later row, likewise.
	last := make(map[uuid.UUID]LookupRequest, len(b.lookups))
	for _, l := range b.lookups {
		last[l.Contact] = l
	}
	var (
		contacts = make([]uuid.UUID, 0, len(last))
		phones   = make([]string, 0, len(last))
		setAt    = make([]time.Time, 0, len(last))
	)
	for _, l := range last {
		contacts, phones, setAt = append(contacts, l.Contact), append(phones, l.Phone), append(setAt, l.SetAt)
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO import_lookups (organization_id, import_id, batch, contact_id, phone, phone_set_at)
		SELECT $1, $2, $3, l.contact_id, l.phone, l.set_at
		FROM unnest($4::uuid[], $5::text[], $6::timestamptz[]) AS l(contact_id, phone, set_at)
		ON CONFLICT (organization_id, import_id, batch, contact_id) DO UPDATE
			SET phone = excluded.phone, phone_set_at = excluded.phone_set_at`,
		b.org, b.id, b.from, contacts, phones, setAt)
	if err != nil {
		return false, fmt.Errorf("queue merged contacts' lookups: %w", err)
	}
	return true, nil
}

// stagedRow is a row of the batch left to merge one by one.
type stagedRow struct {
	line int32
	ch   Changes
}

// leftOver reads, in line order, the batch's rows that setWise did not merge (their
// staged contact id is not a contact): each is probed by its primary key.
func (b *importBatchRun) leftOver(ctx context.Context, tx pgx.Tx) ([]stagedRow, error) {
	rows, _ := tx.Query(ctx, `
		SELECT r.line, r.phone, r.email, r.first_name, r.last_name, r.address, r.city, r.state, r.zip,
			r.timezone, r.tags, r.custom_fields
		FROM import_rows r
		WHERE r.organization_id = (SELECT $1::uuid) AND r.import_id = $2 AND r.line BETWEEN $3 AND $4
			AND r.reason IS NULL
			AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.organization_id = r.organization_id AND c.id = r.contact_id)
		ORDER BY r.line`, planEach, b.org, b.id, b.from, b.to)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (stagedRow, error) {
		var r stagedRow
		err := row.Scan(&r.line, &r.ch.Phone, &r.ch.Email, &r.ch.FirstName, &r.ch.LastName, &r.ch.Address,
			&r.ch.City, &r.ch.State, &r.ch.Zip, &r.ch.Timezone, &r.ch.Tags, &r.ch.CustomFields)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read import rows to merge: %w", err)
	}
	return out, nil
}

// mergeOne runs a row through the create path under a savepoint: merged, created, or (on an
// error that is about the row) rolled back to the savepoint and rejected with its reason.
func (b *importBatchRun) mergeOne(ctx context.Context, tx pgx.Tx, r stagedRow) error {
	for range mergeAttempts {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		mark := len(b.lookups)
		_, created, err := createOrMergeTx(ctx, sp, b.org, r.ch, &b.lookups)
		if err == nil {
			if err := sp.Commit(ctx); err != nil {
				return fmt.Errorf("release savepoint: %w", err)
			}
			if created {
				b.created++
			} else {
				b.merged++
			}
			return nil
		}
		b.lookups = b.lookups[:mark]
		if rbErr := sp.Rollback(ctx); rbErr != nil {
			return fmt.Errorf("roll back to savepoint: %w", rbErr)
		}
		if errors.Is(err, errRaced) {
			continue
		}
		why, ok := b.reason(err)
		if !ok {
			return fmt.Errorf("merge import line %d: %w", r.line, err)
		}
		return b.reject(ctx, tx, r.line, why)
	}
	why, _ := b.reason(&DuplicateError{Field: "phone or email"})
	return b.reject(ctx, tx, r.line, why)
}

func (b *importBatchRun) reject(ctx context.Context, tx pgx.Tx, line int32, why string) error {
	_, err := tx.Exec(ctx, `UPDATE import_rows SET reason = $4 WHERE `+orgKey+` AND import_id = $2 AND line = $3`,
		planEach, b.org, b.id, line, why)
	if err != nil {
		return fmt.Errorf("reject import line %d: %w", line, err)
	}
	b.rejected++
	return nil
}

// collectedLookups is the LookupQueue of an import's rows: it gathers the lookups the create
// path asks for, queued in bulk at the end of the batch.
type collectedLookups []LookupRequest

// EnqueueTx implements LookupQueue.
func (c *collectedLookups) EnqueueTx(_ context.Context, _ pgx.Tx, org, contact uuid.UUID, phone string, setAt time.Time) error {
	*c = append(*c, LookupRequest{Org: org, Contact: contact, Phone: phone, SetAt: setAt})
	return nil
}
