// Package orgtable reads a table whose rows organizations own, keyed by (organization_id, id):
// one row, one row under its lock, and an organization's rows newest first. A service's store
// embeds a Table for the records its API serves (campaigns, polls).
package orgtable

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Table reads the rows of one table as R.
type Table[R any] struct {
	pool            *pgxpool.Pool
	name            string
	get, lock, list string
	scan            func(pgx.Row) (R, error)
}

// New returns table name on pool, its rows read as columns by scan (which answers a missing
// row with the store's not-found error).
func New[R any](pool *pgxpool.Pool, name, columns string, scan func(pgx.Row) (R, error)) *Table[R] {
	get := `SELECT ` + columns + ` FROM ` + name + ` WHERE organization_id = $1 AND id = $2`
	return &Table[R]{
		pool: pool, name: name, scan: scan,
		get:  get,
		lock: get + ` FOR UPDATE`,
		list: `SELECT ` + columns + ` FROM ` + name + ` WHERE organization_id = $1 ORDER BY created_at DESC, id DESC`,
	}
}

// InTx runs fn in a transaction on the table's pool, committed when fn returns nil.
func (t *Table[R]) InTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, t.pool, fn)
}

// Get reads org's row id.
func (t *Table[R]) Get(ctx context.Context, org, id uuid.UUID) (R, error) {
	return t.scan(t.pool.QueryRow(ctx, t.get, org, id))
}

// GetTx reads org's row id inside tx without locking it: a transaction that holds its
// connection must not wait for a second one (many such at once would drain the pool).
func (t *Table[R]) GetTx(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) (R, error) {
	return t.scan(tx.QueryRow(ctx, t.get, org, id))
}

// Lock reads org's row id locked for the rest of tx.
func (t *Table[R]) Lock(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) (R, error) {
	return t.scan(tx.QueryRow(ctx, t.lock, org, id))
}

// List reads org's rows, newest first.
func (t *Table[R]) List(ctx context.Context, org uuid.UUID) ([]R, error) {
	rows, err := t.pool.Query(ctx, t.list, org)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", t.name, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (R, error) { return t.scan(row) })
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", t.name, err)
	}
	return out, nil
}
