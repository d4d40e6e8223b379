package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Sort is a list order; both are newest first with the id breaking ties.
type Sort string

// Sort orders of the contacts list.
const (
	SortUpdatedAt Sort = "updated_at"
	SortCreatedAt Sort = "created_at"
)

// Key is a position in a sort order: the sort value and id of the last row seen.
type Key struct {
	At time.Time
	ID uuid.UUID
}

// Page says which contacts to list.
type Page struct {
	Filter Filter
	Sort   Sort
	After  *Key // keyset position; when nil, Offset rows are skipped instead
	Offset int
	Limit  int
}

// orderSQL is the ORDER BY and keyset comparison of each sort, both matching an index on
// (organization_id, <column> DESC, id DESC).
var orderSQL = map[Sort]struct{ order, after string }{
	SortUpdatedAt: {"updated_at DESC, id DESC", "(updated_at, id) < "},
	SortCreatedAt: {"created_at DESC, id DESC", "(created_at, id) < "},
}

// List returns up to p.Limit contacts (without custom fields) and whether more follow. It reads
// one row more than asked to know. Unless the filter narrows by an index of its own, the page
// is read by walking the sort's index, stopping after the page (see collectInIndexOrder): no
// other plan reads fewer rows, as any other must check each of the organization's contacts.
func (s *Store) List(ctx context.Context, org uuid.UUID, p Page) ([]Contact, bool, error) {
	o, ok := orderSQL[p.Sort]
	if !ok {
		return nil, false, fmt.Errorf("list contacts: unknown sort %q", p.Sort)
	}
	q := newQuery(org, p.Filter)
	if p.After != nil {
		q.where(o.after + "(" + q.arg(p.After.At) + ", " + q.arg(p.After.ID) + ")")
	}
	sql := `SELECT ` + listColumns + ` FROM contacts WHERE ` + q.sql() + ` ORDER BY ` + o.order + ` LIMIT ` + q.arg(p.Limit+1)
	if p.After == nil && p.Offset > 0 {
		sql += ` OFFSET ` + q.arg(p.Offset)
	}
	var (
		items []Contact
		err   error
	)
	if p.Filter.narrowsByIndex() {
		rows, _ := s.pool.Query(ctx, sql, q.args...)
		items, err = collectInto(rows, p.Limit+1, listFields)
	} else {
		items, err = collectInIndexOrder(ctx, s.inOrder, sql, q.args, p.Limit+1, listFields)
	}
	if err != nil {
		return nil, false, fmt.Errorf("list contacts: %w", err)
	}
	if len(items) > p.Limit {
		return items[:p.Limit], true, nil
	}
	return items, false, nil
}

// Count returns how many contacts match f.
func (s *Store) Count(ctx context.Context, org uuid.UUID, f Filter) (int, error) {
	q := newQuery(org, f)
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM contacts WHERE `+q.sql(), q.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count contacts: %w", err)
	}
	return n, nil
}
