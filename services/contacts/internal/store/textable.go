package store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Lookup results recorded at the same time are written together: at most textableBatchMax
// in one statement, textableBatchRuns statements under way at once, each bounded by
// textableBatchTimeout (a lookup job's own timeout).
const (
	textableBatchMax     = 100
	textableBatchRuns    = 2
	textableBatchTimeout = 30 * time.Second
)

// lookupResult is one SetTextable call.
type lookupResult struct {
	org, id  uuid.UUID
	phone    string
	textable bool
}

// SetTextable records a lookup result. It changes nothing when the contact's phone is no longer
// the one looked up (a stale job) or textability is already known (an inbound message marked it
// textable first), so running the job twice is harmless. It reports whether a row changed. It
// returns once the result is committed, written with the results of other lookups completing
// at the same time (setTextableMany).
func (s *Store) SetTextable(ctx context.Context, org, id uuid.UUID, phone string, textable bool) (bool, error) {
	return s.textable.Do(ctx, lookupResult{org: org, id: id, phone: phone, textable: textable})
}

// setTextableMany writes a batch of lookup results in one statement, so the statement's own
// cost (its round trip, planning, the totals trigger, the commit) is paid once per batch
// instead of once per contact. The results are sorted by organization and id, the order in
// which a merge locks the contacts it shares, and the statement probes contacts in that
// order. A contact given two results in one batch takes one of them, as it would from two
// statements.
func (s *Store) setTextableMany(ctx context.Context, in []lookupResult) ([]bool, error) {
	sorted := slices.Clone(in)
	slices.SortFunc(sorted, func(a, b lookupResult) int {
		return cmp.Or(bytes.Compare(a.org[:], b.org[:]), bytes.Compare(a.id[:], b.id[:]))
	})
	orgs, ids := make([]uuid.UUID, len(sorted)), make([]uuid.UUID, len(sorted))
	phones, values := make([]string, len(sorted)), make([]bool, len(sorted))
	for i, r := range sorted {
		orgs[i], ids[i], phones[i], values[i] = r.org, r.id, r.phone, r.textable
	}
	rows, _ := s.pool.Query(ctx, `
		UPDATE contacts c SET is_textable = r.textable, updated_at = now()
		FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::boolean[]) AS r(organization_id, id, phone, textable)
		WHERE c.organization_id = r.organization_id AND c.id = r.id AND c.phone = r.phone AND c.is_textable IS NULL
		RETURNING c.organization_id, c.id`, planEach, orgs, ids, phones, values)
	type key struct{ org, id uuid.UUID }
	changed := map[key]bool{}
	var k key
	_, err := pgx.ForEachRow(rows, []any{&k.org, &k.id}, func() error {
		changed[k] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record textability: %w", err)
	}
	out := make([]bool, len(in))
	for i, r := range in {
		out[i] = changed[key{r.org, r.id}]
	}
	return out, nil
}
