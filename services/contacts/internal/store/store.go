// Package store is the contacts service's SQL: contacts, segments, and the outbox rows and
// lookup jobs written in the same transactions. Every query is scoped to one organization.
package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chorus-sms/chorus/pkg/batch"
)

// ErrNotFound is returned when a row does not exist in the organization.
var ErrNotFound = errors.New("not found")

// ErrAmbiguous is returned by CreateOrMerge when the phone belongs to one contact and the email
// to another: merging cannot resolve it.
var ErrAmbiguous = errors.New("phone and email belong to different contacts")

// DuplicateError is returned when a write would give a row a unique value (a contact's phone
// or email, a segment's name) that another row of the organization holds.
type DuplicateError struct{ Field string }

func (e *DuplicateError) Error() string { return "another record has this " + e.Field }

// LookupQueue queues a phone lookup inside the transaction that gave a contact its phone (at
// setAt, the row's new updated_at), so the job exists exactly when the phone does.
type LookupQueue interface {
	EnqueueTx(ctx context.Context, tx pgx.Tx, org, contact uuid.UUID, phone string, setAt time.Time) error
}

// Store runs the contacts queries.
type Store struct {
	pool     *pgxpool.Pool
	inOrder  *pgxpool.Pool                      // sorting off: see OpenInOrder
	textable *batch.Batcher[lookupResult, bool] // SetTextable's

	exportBatch int // entries ExportConsent reads per query (smaller in tests)
}

// New returns a Store over pool, running the statements whose plan must walk an index in order
// over inOrder, a pool OpenInOrder made.
func New(pool, inOrder *pgxpool.Pool) *Store {
	s := &Store{pool: pool, inOrder: inOrder, exportBatch: defaultExportBatch}
	s.textable = batch.New(s.setTextableMany, textableBatchMax, textableBatchRuns, textableBatchTimeout)
	return s
}

// Contact is a contacts row.
type Contact struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	Phone          *string // E.164
	Email          *string
	FirstName      string
	LastName       string
	Address        string
	City           string
	State          string
	Zip            string
	Tags           []string
	CustomFields   map[string]any // nil in list results, which do not read it
	IsTextable     *bool
	IsOptedIn      bool
	OptedOutAt     *time.Time
	Timezone       string
	IsStarred      bool
	IsArchived     bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// listColumns are read by every contact query; fullColumns add the custom fields.
const (
	listColumns = `id, organization_id, phone, email, first_name, last_name, address, city, state, zip, tags, is_textable, is_opted_in, opted_out_at, timezone, is_starred, is_archived, created_at, updated_at`
	fullColumns = listColumns + `, custom_fields`
)

// listFields appends to dst the destinations of listColumns in c.
func listFields(dst []any, c *Contact) []any {
	return append(dst, &c.ID, &c.OrganizationID, &c.Phone, &c.Email, &c.FirstName, &c.LastName, &c.Address,
		&c.City, &c.State, &c.Zip, &c.Tags, &c.IsTextable, &c.IsOptedIn, &c.OptedOutAt, &c.Timezone,
		&c.IsStarred, &c.IsArchived, &c.CreatedAt, &c.UpdatedAt)
}

func scanFull(row pgx.CollectableRow) (Contact, error) {
	var c Contact
	err := row.Scan(append(listFields(make([]any, 0, 20), &c), &c.CustomFields)...)
	return c, err
}

// collectInto reads up to n rows into a slice made for them, each scanned in place through
// one list of destinations that fields fills for it. pgx.CollectRows grows its slice row by
// row, and a scan function copies each row out of a value of its own with a destination list
// of its own; on a page of contacts that was most of what a list call allocated.
func collectInto[T any](rows pgx.Rows, n int, fields func(dst []any, t *T) []any) ([]T, error) {
	defer rows.Close()
	out := make([]T, 0, n)
	var dest []any
	for rows.Next() {
		var zero T
		out = append(out, zero)
		dest = fields(dest[:0], &out[len(out)-1])
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// uniqueViolation reports which field a unique-index violation is about, if err is one.
func uniqueViolation(err error) (field string, ok bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return "", false
	}
	switch pgErr.ConstraintName {
	case "contacts_org_phone_key":
		return "phone", true
	case "contacts_org_email_key":
		return "email", true
	case "segments_org_name_key":
		return "name", true
	}
	return "id", true
}

// orgKey is the organization condition ($1) of a statement that finds rows by a unique key (a
// phone, an email, an id). The value reaches the planner only through an InitPlan, so it
// estimates the organization at the table's average size instead of from statistics. Statistics
// taken before an organization's list was loaded estimate it at one row, which makes walking
// all of it through any index that leads with organization_id cost exactly what probing the
// unique index does, and the planner took the walk.
const orgKey = `organization_id = (SELECT $1::uuid)`

// planEach, passed as a statement's first argument, runs it unnamed, so it is planned at each
// execution for the table as it is then. A connection otherwise keeps the plan of a statement
// it prepared, and a plan made while the table was new and nearly empty, before anything
// analyzed it, found every index leading with organization_id as cheap as the unique key
// (orgKey's estimate is of an empty table's average) and may walk one of them: kept, it walks
// the whole organization once the organization has grown. The statements of a create and of
// its lookup's result, which run from an organization's first contact on, are run this way.
const planEach = pgx.QueryExecModeCacheDescribe

// OpenInOrder opens a pool of up to conns connections configured as pool's (the database, the
// schema, the tracer) whose sessions run with sorting disabled, for the statements that
// collectInIndexOrder runs. The caller closes it.
func OpenInOrder(ctx context.Context, pool *pgxpool.Pool, conns int) (*pgxpool.Pool, error) {
	if conns < 1 {
		return nil, fmt.Errorf("in-order pool of %d connections: want at least 1", conns)
	}
	cfg := pool.Config()
	cfg.MaxConns = int32(min(conns, math.MaxInt32))
	cfg.MinConns = 0
	cfg.ConnConfig.RuntimeParams["enable_sort"] = "off"
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("in-order pool: %w", err)
	}
	return p, nil
}

// collectInIndexOrder runs sql, a query whose ORDER BY and LIMIT an index of the organization
// serves, on a connection of the in-order pool, where sorting is disabled for the session: the
// plan must walk that index and stop at the LIMIT. Left to choose, the planner weighs the walk
// against reading the rows through another index and sorting them by its estimate of the
// organization's size, which is one row when statistics predate the organization's list, and
// then reading and sorting all of it can look cheaper than the walk.
//
// The setting is the session's (sent when the connection opens), so the query runs alone, one
// statement; it used to be set in a transaction of its own around the query (BEGIN, SET LOCAL,
// the query, COMMIT in one pipeline), three more statements for the server to run each time.
func collectInIndexOrder[T any](ctx context.Context, inOrder *pgxpool.Pool, sql string, args []any, n int, fields func([]any, *T) []any) ([]T, error) {
	rows, _ := inOrder.Query(ctx, sql, args...)
	return collectInto(rows, n, fields)
}

func newID() (uuid.UUID, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.Nil, fmt.Errorf("new id: %w", err)
	}
	return id, nil
}
