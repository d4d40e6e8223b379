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

// StageImport records a new import and copies the file's rows into import_rows as next yields
// them (next returns false at the end), in one transaction that also queues the merge job. The
// rows are streamed: none is kept after it is copied.
func (s *Store) StageImport(ctx context.Context, org uuid.UUID, header []string, next func() (ImportRow, bool, error), q ImportQueue) (Import, error) {
	id, err := newID()
	if err != nil {
		return Import{}, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Import{}, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	src := &stagedRows{org: org, id: id, next: next}
	total, err := tx.CopyFrom(ctx, pgx.Identifier{"import_rows"}, []string{
		"organization_id", "import_id", "line", "contact_id", "phone", "email", "first_name", "last_name",
		"address", "city", "state", "zip", "timezone", "tags", "custom_fields", "cells", "reason",
	}, src)
	if err != nil {
		return Import{}, fmt.Errorf("copy import rows: %w", err)
	}
	imp := Import{ID: id, OrganizationID: org, Status: ImportQueued, Header: header,
		Total: int32(total), Processed: src.rejected, Rejected: src.rejected}
	err = tx.QueryRow(ctx, `
		INSERT INTO contact_imports (id, organization_id, header, total, processed, rejected)
		VALUES ($1, $2, $3, $4, $5, $5) RETURNING created_at`,
		id, org, header, imp.Total, imp.Rejected).Scan(&imp.CreatedAt)
	if err != nil {
		return Import{}, fmt.Errorf("insert import: %w", err)
	}
	if err := q.EnqueueImportTx(ctx, tx, org, id); err != nil {
		return Import{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Import{}, fmt.Errorf("commit import: %w", err)
	}
	return imp, nil
}

// stagedRows is the pgx.CopyFromSource of StageImport: each row gets its line number and the
// id of the contact it creates if nothing matches.
type stagedRows struct {
	org, id  uuid.UUID
	next     func() (ImportRow, bool, error)
	line     int32
	rejected int32
	values   []any
	err      error
}

func (r *stagedRows) Next() bool {
	row, ok, err := r.next()
	if err != nil {
		r.err = err
		return false
	}
	if !ok {
		return false
	}
	contact, err := newID()
	if err != nil {
		r.err = err
		return false
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
	imp, err := getImport(ctx, db, org, id, "")
	if err != nil {
		return Import{}, err
	}
	err = db.QueryRow(ctx, `SELECT count(*) FROM import_lookups WHERE `+orgKey+` AND import_id = $2`, org, id).
		Scan(&imp.LookupsPending)
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

// DoneImportLookups deletes the rows of lookups that are over.
func (s *Store) DoneImportLookups(ctx context.Context, org, id uuid.UUID, batch int32, contacts []uuid.UUID) error {
	if len(contacts) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `
		DELETE FROM import_lookups WHERE `+orgKey+` AND import_id = $2 AND batch = $3 AND contact_id = ANY($4)`,
		planEach, org, id, batch, contacts)
	if err != nil {
		return fmt.Errorf("delete done lookups: %w", err)
	}
	return nil
}

func getImport(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, org, id uuid.UUID, lock string) (Import, error) {
	rows, _ := db.Query(ctx, `
		SELECT id, organization_id, status, header, total, processed, created, merged, rejected, created_at, completed_at
		FROM contact_imports WHERE `+orgKey+` AND id = $2 `+lock, org, id)
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
	imp, err := getImport(ctx, s.pool, org, id, "")
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
