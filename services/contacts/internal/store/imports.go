package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Import statuses.
const (
	ImportQueued    = "queued"
	ImportRunning   = "running"
	ImportCompleted = "completed"
	ImportFailed    = "failed"
)

// importBatch is how many lines of a file one merge transaction takes: large enough that a
// statement's own cost is spread over many rows, small enough that a batch's locks and its
// retry after a failure stay short.
const importBatch = 20000

// Import is a contact_imports row.
type Import struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	Status         string
	Header         []string
	Total          int32
	Processed      int32
	Created        int32
	Merged         int32
	Rejected       int32
	LookupsPending int32
	CreatedAt      time.Time
	CompletedAt    *time.Time
}

// ImportRow is one data line of a file as staged: the fields validated as a create's are (a nil
// one was an empty cell: not sent), or the reason it is rejected.
type ImportRow struct {
	Changes Changes
	Cells   []string
	Reason  string // set: rejected as read
}

// ImportQueue queues the job that merges an import, inside the transaction that staged it.
type ImportQueue interface {
	EnqueueImportTx(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) error
}

// LookupRequest is one phone lookup an import queues.
type LookupRequest struct {
	Org, Contact uuid.UUID
	Phone        string
	SetAt        time.Time
}

// BulkLookupQueue queues the job that works the lookups of an import's batch (its rows of
// import_lookups), inside the batch's transaction.
type BulkLookupQueue interface {
	EnqueueLookupBatchTx(ctx context.Context, tx pgx.Tx, org, importID uuid.UUID, batch int32) error
}

// ImportChunk is how many lines of a file of declared length one staging transaction commits,
// so its merge can start on them while the rest is still being sent: a merge batch's worth.
const ImportChunk = importBatch

// ErrImportEnded is staging's error when the import it stages has ended meanwhile (failed:
// its staging stalled past StagingStalled, or its merge gave up).
var ErrImportEnded = errors.New("the import ended before its file did")

// StageImport records a new import and copies the file's rows into import_rows as next yields
// them (next returns false at the end). The rows are streamed: none is kept after it is copied.
// With chunk 0 the whole file is one transaction, which also queues the merge job: an error
// keeps nothing of it. Otherwise each chunk lines are a transaction, the first of which records
// the import and queues its merge, so the merge overlaps the rest of the upload; an error after
// the first chunk marks the import failed, its lines merged so far kept (importing the file
// again completes it). Staging's progress goes to import_uploads, never to the import's row,
// which the merge holds locked through each batch. The import is answered as GET shows it once
// the file is staged.
func (s *Store) StageImport(ctx context.Context, org uuid.UUID, header []string, next func() (ImportRow, bool, error), q ImportQueue, chunk int32) (Import, error) {
	id, err := newID()
	if err != nil {
		return Import{}, err
	}
	src := &stagedRows{org: org, id: id, next: next, progress: s.stagingProgress(ctx, org, id), beat: time.Now()}
	for first := true; !src.ended; first = false {
		src.stopAt = 0
		if chunk > 0 {
			src.stopAt = src.line + chunk
		}
		if err := s.stageChunk(ctx, src, header, q, first); err != nil {
			if first {
				return Import{}, err
			}
			// The import is already queued: end it, in a context of its own (the call's may be
			// what ended), so its merge job stops at the lines staged so far.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stagingFailTimeout)
			defer cancel()
			if ferr := s.FailImport(fctx, org, id); ferr != nil {
				return Import{}, fmt.Errorf("%w (and marking the import failed: %w)", err, ferr)
			}
			return Import{}, err
		}
	}
	return s.GetImport(ctx, org, id)
}

// stagingFailTimeout bounds marking an import failed after its upload broke off.
const stagingFailTimeout = 10 * time.Second

// stageChunk copies src's rows up to its stopAt (or the end) in one transaction: the first
// chunk's records the import and queues its merge; each later one records its progress.
func (s *Store) stageChunk(ctx context.Context, src *stagedRows, header []string, q ImportQueue, first bool) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_rows"}, []string{
		"organization_id", "import_id", "line", "contact_id", "phone", "email", "first_name", "last_name",
		"address", "city", "state", "zip", "timezone", "tags", "custom_fields", "cells", "reason",
	}, src); err != nil {
		return fmt.Errorf("copy import rows: %w", err)
	}
	if first {
		if _, err := tx.Exec(ctx, `INSERT INTO contact_imports (id, organization_id, header) VALUES ($1, $2, $3)`,
			src.id, src.org, header); err != nil {
			return fmt.Errorf("insert import: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO import_uploads (organization_id, import_id, staged_through, rejected_as_read, complete)
			VALUES ($1, $2, $3, $4, $5)`, src.org, src.id, src.line, src.rejected, src.ended); err != nil {
			return fmt.Errorf("insert import upload: %w", err)
		}
		if err := q.EnqueueImportTx(ctx, tx, src.org, src.id); err != nil {
			return err
		}
	} else {
		tag, err := tx.Exec(ctx, `
			UPDATE import_uploads SET staged_through = $3, rejected_as_read = $4, complete = $5, staged_at = now()
			WHERE `+orgKey+` AND import_id = $2`, planEach, src.org, src.id, src.line, src.rejected, src.ended)
		if err != nil {
			return fmt.Errorf("record import upload: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrImportEnded
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit import rows: %w", err)
	}
	return nil
}

// stagingBeat is how often a staging that is reading lines, but has not committed a chunk
// since, records that it is alive, so a slow upload is not taken for a stalled one.
const stagingBeat = 15 * time.Second

// stagingProgress records, outside the chunk's transaction, that staging of an import is
// reading lines; before the first chunk commits there is no row to touch, and no merge to wait.
func (s *Store) stagingProgress(ctx context.Context, org, id uuid.UUID) func() error {
	return func() error {
		_, err := s.pool.Exec(ctx, `UPDATE import_uploads SET staged_at = now() WHERE `+orgKey+` AND import_id = $2`,
			planEach, org, id)
		if err != nil {
			return fmt.Errorf("record import staging alive: %w", err)
		}
		return nil
	}
}

// stagedRows is the pgx.CopyFromSource of StageImport: each row gets its line number and the
// id of the contact it creates if nothing matches. It ends a chunk at line stopAt (0: none),
// and says when the file has ended.
type stagedRows struct {
	org, id  uuid.UUID
	next     func() (ImportRow, bool, error)
	progress func() error
	line     int32
	rejected int32
	stopAt   int32
	ended    bool
	beat     time.Time
	values   []any
	err      error
}

func (r *stagedRows) Next() bool {
	if r.stopAt > 0 && r.line >= r.stopAt {
		return false
	}
	row, ok, err := r.next()
	if err != nil {
		r.err = err
		return false
	}
	if !ok {
		r.ended = true
		return false
	}
	contact, err := newID()
	if err != nil {
		r.err = err
		return false
	}
	if r.stopAt > 0 {
		if now := time.Now(); now.Sub(r.beat) >= stagingBeat {
			r.beat = now
			if err := r.progress(); err != nil {
				r.err = err
				return false
			}
		}
	}
	r.line++
	ch := row.Changes
	var reason *string
	if row.Reason != "" {
		reason = &row.Reason
		r.rejected++
	}
	var custom map[string]any
	if len(ch.CustomFields) > 0 {
		custom = ch.CustomFields
	}
	r.values = append(r.values[:0], r.org, r.id, r.line, contact, ch.Phone, ch.Email, ch.FirstName, ch.LastName,
		ch.Address, ch.City, ch.State, ch.Zip, ch.Timezone, ch.Tags, custom, row.Cells, reason)
	return true
}

func (r *stagedRows) Values() ([]any, error) { return r.values, nil }
func (r *stagedRows) Err() error             { return r.err }

// GetImport returns an import with its pending lookups, or ErrNotFound.
func (s *Store) GetImport(ctx context.Context, org, id uuid.UUID) (Import, error) {
	return getImportWithLookups(ctx, s.pool, org, id)
}

// getImportWithLookups is an import as GET shows it: its row and its pending lookups.
func getImportWithLookups(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}, org, id uuid.UUID) (Import, error) {
	imp, err := getImport(ctx, db, org, id)
	if err != nil {
		return Import{}, err
	}
	err = db.QueryRow(ctx, `SELECT coalesce(sum(pending), 0)::int FROM import_lookup_batches WHERE `+orgKey+` AND import_id = $2`,
		planEach, org, id).Scan(&imp.LookupsPending)
	if err != nil {
		return Import{}, fmt.Errorf("count pending lookups: %w", err)
	}
	return imp, nil
}

// ImportLookups returns the lookups of an import's batch still pending.
func (s *Store) ImportLookups(ctx context.Context, org, id uuid.UUID, batch int32) ([]LookupRequest, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT organization_id, contact_id, phone, phone_set_at FROM import_lookups
		WHERE `+orgKey+` AND import_id = $2 AND batch = $3`, planEach, org, id, batch)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LookupRequest, error) {
		var r LookupRequest
		err := row.Scan(&r.Org, &r.Contact, &r.Phone, &r.SetAt)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read pending lookups: %w", err)
	}
	return out, nil
}

// DoneImportLookups deletes the rows of lookups that are over and takes them off their batch's
// pending count.
func (s *Store) DoneImportLookups(ctx context.Context, org, id uuid.UUID, batch int32, contacts []uuid.UUID) error {
	if len(contacts) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `
		WITH done AS (
			DELETE FROM import_lookups WHERE `+orgKey+` AND import_id = $2 AND batch = $3 AND contact_id = ANY($4)
			RETURNING 1
		)
		UPDATE import_lookup_batches SET pending = pending - (SELECT count(*) FROM done)
		WHERE `+orgKey+` AND import_id = $2 AND batch = $3`,
		planEach, org, id, batch, contacts)
	if err != nil {
		return fmt.Errorf("delete done lookups: %w", err)
	}
	return nil
}

// getImport reads an import as GET shows it: the counts staging has not yet handed over to the
// row (import_uploads, until the import ends) are added to its own.
func getImport(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, org, id uuid.UUID) (Import, error) {
	rows, _ := db.Query(ctx, `
		SELECT i.id, i.organization_id, i.status, i.header, i.total + coalesce(u.staged_through, 0),
			i.processed + coalesce(u.rejected_as_read, 0), i.created, i.merged, i.rejected + coalesce(u.rejected_as_read, 0),
			i.created_at, i.completed_at
		FROM contact_imports i
		LEFT JOIN import_uploads u ON u.organization_id = i.organization_id AND u.import_id = i.id
		WHERE i.organization_id = (SELECT $1::uuid) AND i.id = $2`, planEach, org, id)
	imp, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (Import, error) {
		var i Import
		err := row.Scan(&i.ID, &i.OrganizationID, &i.Status, &i.Header, &i.Total, &i.Processed, &i.Created,
			&i.Merged, &i.Rejected, &i.CreatedAt, &i.CompletedAt)
		return i, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Import{}, ErrNotFound
	}
	if err != nil {
		return Import{}, fmt.Errorf("select import: %w", err)
	}
	return imp, nil
}

// RejectedRows calls each with the cells and reason of every rejected row of an import, in
// line order, reading them in pages so none is held longer than its page. It returns the
// import's header first, or ErrNotFound.
func (s *Store) RejectedRows(ctx context.Context, org, id uuid.UUID, header func([]string) error, each func(cells []string, reason string) error) error {
	imp, err := getImport(ctx, s.pool, org, id)
	if err != nil {
		return err
	}
	if err := header(imp.Header); err != nil {
		return err
	}
	after := int32(0)
	for {
		rows, _ := s.pool.Query(ctx, `
			SELECT line, cells, reason FROM import_rows
			WHERE `+orgKey+` AND import_id = $2 AND line > $3 AND reason IS NOT NULL
			ORDER BY line LIMIT 1000`, planEach, org, id, after)
		var (
			cells  []string
			reason string
			n      int
		)
		_, err := pgx.ForEachRow(rows, []any{&after, &cells, &reason}, func() error {
			n++
			return each(cells, reason)
		})
		if err != nil {
			return fmt.Errorf("read rejected rows: %w", err)
		}
		if n < 1000 {
			return nil
		}
	}
}
