package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
)

// EventImportFinished is the outbox event type written when an import completes or fails.
const EventImportFinished = "contact.import_finished"

// RejectReason turns a row's merge error into the reason its rejected row gives (what a POST
// of the same fields would answer); false means the error is not about the row.
type RejectReason func(error) (string, bool)

// ImportProgress is where an import stands after MergeImportBatch.
type ImportProgress int

const (
	// ImportMore: lines staged and not yet merged may remain.
	ImportMore ImportProgress = iota
	// ImportWaiting: every staged line is merged, and the rest of the file is still being sent.
	ImportWaiting
	// ImportDone: the import is completed or failed.
	ImportDone
)

// StagingStalled is how long a merge that has caught up with its upload waits for staging to
// make progress (a chunk committed, or lines read: see stagingBeat) before it takes the staging
// side for gone (its process crashed, or its client stopped sending) and fails the import. Long
// enough that a slow connection or a busy database does not fail an upload that is alive.
const StagingStalled = 2 * time.Minute

// MergeImportBatch merges the next batch of an import's staged lines in one transaction and
// reports where the import stands. Rows no earlier row of the batch shares a phone or email
// with are inserted set-wise with the ids they were staged with; the others (a key already
// held, or held by an earlier row) go one by one, in line order, through the create path's
// own merge (createOrMergeTx) under a savepoint, so a row that cannot be merged is rejected
// with its reason and the batch goes on. Lookups of the phones the batch gave are queued in
// bulk. The batch's end line is committed with its effects, so a job run again resumes after
// it. Only lines staging has committed are merged (import_uploads, read without lock: staging
// never waits for a batch); the import completes once the file is complete and every line is
// merged, and fails when staging stalled for StagingStalled.
func (s *Store) MergeImportBatch(ctx context.Context, org, id uuid.UUID, q BulkLookupQueue, reason RejectReason) (ImportProgress, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return ImportMore, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	var (
		status                string
		through, last, staged int32
		upload                *int32
		complete, stalled     *bool
	)
	err = tx.QueryRow(ctx, `
		SELECT i.status, i.merged_through, i.total, u.staged_through, u.complete,
			u.staged_at < now() - make_interval(secs => $3)
		FROM contact_imports i
		LEFT JOIN import_uploads u ON u.organization_id = i.organization_id AND u.import_id = i.id
		WHERE i.organization_id = (SELECT $1::uuid) AND i.id = $2
		FOR UPDATE OF i`, planEach, org, id, StagingStalled.Seconds()).Scan(&status, &through, &last, &upload, &complete, &stalled)
	if errors.Is(err, pgx.ErrNoRows) {
		return ImportDone, nil // deleted with its organization: nothing left to do
	}
	if err != nil {
		return ImportMore, fmt.Errorf("lock import: %w", err)
	}
	if status == ImportCompleted || status == ImportFailed {
		return ImportDone, nil
	}
	if upload != nil {
		staged = *upload
	}
	last += staged
	fileEnded := complete == nil || *complete
	if through >= last && !fileEnded {
		if stalled == nil || !*stalled {
			return ImportWaiting, nil
		}
		if err := failImport(ctx, tx, org, id); err != nil {
			return ImportMore, err
		}
		if err := tx.Commit(ctx); err != nil {
			return ImportMore, fmt.Errorf("commit stalled import: %w", err)
		}
		return ImportDone, nil
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
		if lost && err == nil {
			return ImportDone, nil
		}
		return ImportMore, err
	}
	if err := b.run(ctx, tx); err != nil {
		return ImportMore, err
	}
	queued, err := b.queueLookups(ctx, tx)
	if err != nil {
		return ImportMore, err
	}
	if queued {
		if err := b.countLookups(ctx, tx); err != nil {
			return ImportMore, err
		}
		if err := q.EnqueueLookupBatchTx(ctx, tx, org, id, b.from); err != nil {
			return ImportMore, err
		}
	}
	done := fileEnded && to >= last
	if done {
		if err := foldUpload(ctx, tx, org, id); err != nil {
			return ImportMore, err
		}
	}
	_, err = tx.Exec(ctx, `
		UPDATE contact_imports SET merged_through = $3, processed = processed + $4, created = created + $5,
			merged = merged + $6, rejected = rejected + $7,
			status = CASE WHEN $8 THEN 'completed' ELSE 'running' END,
			completed_at = CASE WHEN $8 THEN now() END
		WHERE `+orgKey+` AND id = $2`,
		org, id, to, b.created+b.merged+b.rejected, b.created, b.merged, b.rejected, done)
	if err != nil {
		return ImportMore, fmt.Errorf("record import progress: %w", err)
	}
	if done {
		if err := publishFinished(ctx, tx, org, id); err != nil {
			return ImportMore, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return ImportMore, fmt.Errorf("commit import batch: %w", err)
	}
	if done {
		return ImportDone, nil
	}
	return ImportMore, nil
}

// FailImport marks an import failed (its job gave up); the lines merged so far stay merged.
func (s *Store) FailImport(ctx context.Context, org, id uuid.UUID) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	if err := failImport(ctx, tx, org, id); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit failed import: %w", err)
	}
	return nil
}

// failImport marks a queued or running import failed and publishes that it finished.
func failImport(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) error {
	tag, err := tx.Exec(ctx, `
		UPDATE contact_imports SET status = 'failed', completed_at = now()
		WHERE `+orgKey+` AND id = $2 AND status IN ('queued', 'running')`, org, id)
	if err != nil {
		return fmt.Errorf("fail import: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	if err := foldUpload(ctx, tx, org, id); err != nil {
		return err
	}
	return publishFinished(ctx, tx, org, id)
}

// foldUpload hands an ending import's staging counts over to its row and deletes its
// import_uploads row (waiting for a staging transaction that holds it, whose counts it then
// takes). A staging still running finds no row at its next chunk and stops (ErrImportEnded).
func foldUpload(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) error {
	_, err := tx.Exec(ctx, `
		WITH upload AS (
			DELETE FROM import_uploads WHERE `+orgKey+` AND import_id = $2
			RETURNING staged_through, rejected_as_read
		)
		UPDATE contact_imports i SET total = i.total + u.staged_through,
			processed = i.processed + u.rejected_as_read, rejected = i.rejected + u.rejected_as_read
		FROM upload u WHERE i.organization_id = $1 AND i.id = $2`, planEach, org, id)
	if err != nil {
		return fmt.Errorf("fold import upload: %w", err)
	}
	return nil
}

// publishFinished writes the contact.import_finished event of an import just marked completed
// or failed, in the transaction that marked it, with the import as GET shows it then.
func publishFinished(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) error {
	imp, err := getImportWithLookups(ctx, tx, org, id)
	if err != nil {
		return err
	}
	ev := &eventsv1.ContactImportFinished{
		OrganizationId: org.String(), ImportId: id.String(), Status: imp.Status, Total: imp.Total,
		Processed: imp.Processed, Created: imp.Created, Merged: imp.Merged, Rejected: imp.Rejected,
		LookupsPending: imp.LookupsPending, CreatedAt: timestamppb.New(imp.CreatedAt),
	}
	if imp.CompletedAt != nil {
		ev.CompletedAt = timestamppb.New(*imp.CompletedAt)
	}
	if err := outbox.Enqueue(ctx, tx, outbox.Event{Type: EventImportFinished, OrgID: org, Payload: ev}); err != nil {
		return fmt.Errorf("enqueue %s: %w", EventImportFinished, err)
	}
	return nil
}

// importBatchRun is one batch of MergeImportBatch: lines from..to of an import.
type importBatchRun struct {
	org, id                   uuid.UUID
	from, to                  int32
	reason                    RejectReason
	created, merged, rejected int32
	queued                    int32            // lookups insertFresh queued
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
	if err := b.insertFresh(ctx, tx); err != nil {
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

// insertFresh inserts, in one statement, the batch's rows whose phone and email no earlier row
// of the batch holds and queues the lookups of their phones (import_lookups); a row whose key
// a contact already holds inserts nothing (ON CONFLICT) and is merged by leftOver's path. Each
// key is probed in the unique indexes, as a create's is. Each contact's initial opt-in is
// recorded by its import_id, which its consent history reads as its first entry (see
// ConsentHistory): no consent_events row is written for it.
func (b *importBatchRun) insertFresh(ctx context.Context, tx pgx.Tx) error {
	err := tx.QueryRow(ctx, `
		WITH batch AS (
			SELECT r.*,
				row_number() OVER (PARTITION BY r.phone ORDER BY r.line) AS phone_rank,
				row_number() OVER (PARTITION BY lower(r.email) ORDER BY r.line) AS email_rank
			FROM import_rows r
			WHERE r.organization_id = (SELECT $1::uuid) AND r.import_id = $2 AND r.line BETWEEN $3 AND $4
				AND r.reason IS NULL
		), created AS (
			INSERT INTO contacts (id, organization_id, phone, email, first_name, last_name, address, city,
				state, zip, tags, custom_fields, timezone, import_id)
			SELECT contact_id, organization_id, phone, email, coalesce(first_name, ''), coalesce(last_name, ''),
				coalesce(address, ''), coalesce(city, ''), coalesce(state, ''), coalesce(zip, ''),
				coalesce(tags, '{}'), coalesce(custom_fields, '{}'), coalesce(timezone, ''), import_id
			FROM batch
			WHERE (phone IS NULL OR phone_rank = 1) AND (email IS NULL OR email_rank = 1)
			ORDER BY line
			ON CONFLICT DO NOTHING
			RETURNING organization_id, id, phone, updated_at
		), queued AS (
			INSERT INTO import_lookups (organization_id, import_id, batch, contact_id, phone, phone_set_at)
			SELECT organization_id, $2, $3, id, phone, updated_at FROM created WHERE phone IS NOT NULL
			RETURNING 1
		)
		SELECT (SELECT count(*) FROM created), (SELECT count(*) FROM queued)`,
		planEach, b.org, b.id, b.from, b.to).Scan(&b.created, &b.queued)
	if err != nil {
		return fmt.Errorf("insert imported contacts: %w", err)
	}
	return nil
}

// queueLookups adds the lookups the rows merged one by one asked for to the batch's, and
// reports whether the batch queued any.
func (b *importBatchRun) queueLookups(ctx context.Context, tx pgx.Tx) (bool, error) {
	if len(b.lookups) == 0 {
		return b.queued > 0, nil
	}
	// A contact given two phones by two rows of the batch is looked up for the last; one
	// created by insertFresh and given another phone by a later row, likewise.
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

// countLookups records how many lookups the batch queued (import_lookup_batches), which GET of
// the import sums.
func (b *importBatchRun) countLookups(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO import_lookup_batches (organization_id, import_id, batch, pending)
		SELECT $1::uuid, $2::uuid, $3::int, count(*) FROM import_lookups WHERE `+orgKey+` AND import_id = $2 AND batch = $3
		ON CONFLICT (organization_id, import_id, batch) DO UPDATE SET pending = excluded.pending`,
		planEach, b.org, b.id, b.from)
	if err != nil {
		return fmt.Errorf("count the batch's lookups: %w", err)
	}
	return nil
}

// stagedRow is a row of the batch left to merge one by one.
type stagedRow struct {
	line int32
	ch   Changes
}

// leftOver reads, in line order, the batch's rows that insertFresh did not insert (their
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
		_, created, err := createOrMergeTx(ctx, sp, b.org, r.ch, &b.lookups, Origin{Source: SourceImport, ImportID: &b.id})
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
