package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
	"github.com/chorus-sms/chorus/services/contacts/migrations"
)

// The totals follow every kind of write (bulk and single inserts, updates of textability and
// consent, deletions) for each organization apart: textable is isTextable true (a pending
// lookup is not), opted out is isOptedIn false; they equal a count of the rows.
func TestTotalsFollowEveryWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	st := newStore(t, pool)
	org, other := uuid.New(), uuid.New()
	totals := func(o uuid.UUID) store.Counts {
		c, err := st.Totals(ctx, o)
		require.NoError(t, err)
		var want store.Counts
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE is_textable), count(*) FILTER (WHERE NOT is_opted_in)
			FROM contacts WHERE organization_id = $1`, o).Scan(&want.Total, &want.Textable, &want.OptedOut))
		assert.Equal(t, want, c, "the totals are the rows' count")
		return c
	}
	assert.Equal(t, store.Counts{}, totals(org), "no contact yet")
	_, err := pool.Exec(ctx, `INSERT INTO contacts (id, organization_id, phone, is_textable, is_opted_in) VALUES
		(gen_random_uuid(), $1, '+12025550101', true, true),
		(gen_random_uuid(), $1, '+12025550102', true, false),
		(gen_random_uuid(), $1, '+12025550103', NULL, true),
		(gen_random_uuid(), $1, '+12025550104', false, false),
		(gen_random_uuid(), $2, '+12025550101', true, false)`, org, other)
	require.NoError(t, err)
	assert.Equal(t, store.Counts{Total: 4, Textable: 2, OptedOut: 2}, totals(org))
	assert.Equal(t, store.Counts{Total: 1, Textable: 1, OptedOut: 1}, totals(other))

	_, err = pool.Exec(ctx, `UPDATE contacts SET is_textable = true WHERE organization_id = $1 AND phone = '+12025550103'`, org)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE contacts SET is_opted_in = true WHERE organization_id = $1 AND phone = '+12025550102'`, org)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE contacts SET first_name = 'X' WHERE organization_id = $1`, org)
	require.NoError(t, err)
	assert.Equal(t, store.Counts{Total: 4, Textable: 3, OptedOut: 1}, totals(org))

	_, err = pool.Exec(ctx, `DELETE FROM contacts WHERE organization_id = $1 AND phone IN ('+12025550101', '+12025550104')`, org)
	require.NoError(t, err)
	assert.Equal(t, store.Counts{Total: 2, Textable: 2, OptedOut: 0}, totals(org))
	assert.Equal(t, store.Counts{Total: 1, Textable: 1, OptedOut: 1}, totals(other), "another organization's are untouched")
}

// Totals stay exact while many transactions write one organization's contacts at once:
// creates and merges, deletions, opt-outs and opt-ins, lookup results, and bulk statements
// spanning two organizations. All along, a reader checks in one snapshot that the totals equal
// a count of the rows; at the end Totals equals each organization's count.
func TestTotalsStayExactUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const workers, rounds = 16, 24
	pool := newPoolOf(t, workers+2)
	st := newStore(t, pool)
	org, other := uuid.New(), uuid.New()

	stop := make(chan struct{})
	reader := make(chan error, 1)
	checks := 0
	go func() {
		for {
			if err := totalsMatchRows(ctx, pool, org); err != nil {
				reader <- err
				return
			}
			checks++
			select {
			case <-stop:
				reader <- nil
				return
			default:
			}
		}
	}()

	g, gctx := errgroup.WithContext(ctx)
	for w := range workers {
		g.Go(func() error { return writeConcurrently(gctx, st, pool, org, other, w, workers, rounds) })
	}
	require.NoError(t, g.Wait())
	close(stop)
	require.NoError(t, <-reader)
	assert.Positive(t, checks)

	for _, o := range []uuid.UUID{org, other} {
		got, err := st.Totals(ctx, o)
		require.NoError(t, err)
		var want store.Counts
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE is_textable IS TRUE),
				count(*) FILTER (WHERE is_opted_in IS FALSE)
			FROM contacts WHERE organization_id = $1`, o).Scan(&want.Total, &want.Textable, &want.OptedOut))
		assert.Equal(t, want, got, "the totals are the rows' count")
		assert.Positive(t, want.Total)
	}
	var stripes int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM contact_total_stripes WHERE organization_id = $1`, org).Scan(&stripes))
	assert.Greater(t, stripes, 1, "concurrent writers add to several stripes")
}

// Two transactions writing one organization's contacts (a deletion, a lookup result, a create)
// do not wait for each other's commit to count them: each adds to its own stripe, one that
// counted none of the organization's contacts before.
func TestConcurrentWritesOfOneOrganizationDoNotWaitOnItsTotals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPoolOf(t, 10)
	st := newStore(t, pool)
	org := uuid.New()
	_, err := pool.Exec(ctx, `INSERT INTO contacts (id, organization_id, phone) VALUES
		(gen_random_uuid(), $1, '+13035550001'), (gen_random_uuid(), $1, '+13035550002'),
		(gen_random_uuid(), $1, '+13035550003'), (gen_random_uuid(), $1, '+13035550004')`, org)
	require.NoError(t, err)

	// Two connections whose backends fall on stripes of their own.
	var conns []*pgxpool.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Release()
		}
	})
	taken := map[int]bool{}
	rows, _ := pool.Query(ctx, `SELECT stripe FROM contact_total_stripes WHERE organization_id = $1`, org)
	seeded, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	for _, s := range seeded {
		taken[s] = true
	}
	var picked []*pgxpool.Conn
	for len(picked) < 2 && len(conns) < 10 {
		c, err := pool.Acquire(ctx)
		require.NoError(t, err)
		conns = append(conns, c)
		var s int
		require.NoError(t, c.QueryRow(ctx, `SELECT contact_totals_stripe()`).Scan(&s))
		if !taken[s] {
			taken[s] = true
			picked = append(picked, c)
		}
	}
	require.Len(t, picked, 2, "no two connections of stripes of their own")
	var txs []pgx.Tx
	for _, c := range picked {
		tx, err := c.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op once committed
		// Any wait for a lock fails the statement instead of hanging the test.
		_, err = tx.Exec(ctx, `SET LOCAL lock_timeout = '1s'`)
		require.NoError(t, err)
		txs = append(txs, tx)
	}
	for i, tx := range txs {
		_, err = tx.Exec(ctx, `DELETE FROM contacts WHERE organization_id = $1 AND phone = $2`, org, fmt.Sprintf("+1303555000%d", i+1))
		require.NoError(t, err, "a deletion waits for no other transaction")
		_, err = tx.Exec(ctx, `UPDATE contacts SET is_textable = true WHERE organization_id = $1 AND phone = $2`, org, fmt.Sprintf("+1303555000%d", i+3))
		require.NoError(t, err, "a lookup result waits for no other transaction")
		_, err := tx.Exec(ctx, `INSERT INTO contacts (id, organization_id, phone, is_opted_in) VALUES (gen_random_uuid(), $1, $2, false)`,
			org, fmt.Sprintf("+1303555010%d", i))
		require.NoError(t, err, "a create waits for no other transaction")
	}
	for _, tx := range txs {
		require.NoError(t, tx.Commit(ctx))
	}
	c, err := st.Totals(ctx, org)
	require.NoError(t, err)
	assert.Equal(t, store.Counts{Total: 4, Textable: 2, OptedOut: 2}, c)
}

// writeConcurrently is one writer of TestTotalsStayExactUnderConcurrentWrites: each round
// creates a contact, merges into a neighbour's, records a lookup result, opts phones out and in
// (one of them new, which creates a contact), deletes contacts, and now and then runs bulk
// statements over its own rows of both organizations.
func writeConcurrently(ctx context.Context, st *store.Store, pool *pgxpool.Pool, org, other uuid.UUID, w, workers, rounds int) error {
	phone := func(w, r int) string { return fmt.Sprintf("+1303%03d%04d", w, r) }
	optOutOnly := func(w, r int) string { return fmt.Sprintf("+1720%03d%04d", w, r) }
	for r := range rounds {
		p, email := phone(w, r), fmt.Sprintf("w%d.r%d@example.com", w, r)
		c, _, err := st.CreateOrMerge(ctx, org, store.Changes{Phone: &p, Email: &email}, skipLookups{}, store.Origin{Source: store.SourceAPI})
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		if r > 0 {
			// A neighbour's earlier phone: a merge, or a create if the neighbour deleted it.
			np, first := phone((w+1)%workers, r-1), "Merged"
			if _, _, err := st.CreateOrMerge(ctx, org, store.Changes{Phone: &np, FirstName: &first}, skipLookups{}, store.Origin{Source: store.SourceAPI}); err != nil {
				return fmt.Errorf("merge: %w", err)
			}
		}
		if _, err := st.SetTextable(ctx, org, c.ID, p, r%3 != 0); err != nil {
			return err
		}
		at := time.Now()
		if r%2 == 0 {
			if _, err := st.SetConsent(ctx, org, store.ConsentChange{Phone: p, OccurredAt: at, Origin: store.ParseSource("keyword:STOP")}, skipLookups{}); err != nil {
				return fmt.Errorf("opt out: %w", err)
			}
		}
		if r%4 == 0 {
			if _, err := st.SetConsent(ctx, org, store.ConsentChange{Phone: p, OptedIn: true, OccurredAt: at, Origin: store.ParseSource("keyword:START")}, skipLookups{}); err != nil {
				return fmt.Errorf("opt in: %w", err)
			}
		}
		if r%5 == 0 {
			if _, err := st.SetConsent(ctx, org, store.ConsentChange{Phone: optOutOnly(w, r), OccurredAt: at, Origin: store.ParseSource("keyword:STOP")}, skipLookups{}); err != nil {
				return fmt.Errorf("opt out a new phone: %w", err)
			}
		}
		if r%3 == 2 {
			if err := st.Delete(ctx, org, c.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("delete: %w", err)
			}
		}
		if r%6 == 5 {
			// Bulk statements over this writer's own rows, both organizations in each.
			prefix := fmt.Sprintf("+1404%03d%02d", w, r)
			if _, err := pool.Exec(ctx, `INSERT INTO contacts (id, organization_id, phone, is_textable, is_opted_in)
				SELECT gen_random_uuid(), CASE WHEN i % 2 = 0 THEN $1 ELSE $2 END::uuid, $3 || lpad(i::text, 2, '0'), i % 3 = 0, i % 4 <> 0
				FROM generate_series(1, 7) i`, org, other, prefix); err != nil {
				return fmt.Errorf("bulk insert: %w", err)
			}
			if _, err := pool.Exec(ctx, `UPDATE contacts SET is_textable = NOT coalesce(is_textable, false), is_opted_in = NOT is_opted_in
				WHERE organization_id IN ($1, $2) AND phone LIKE $3 || '%'`, org, other, prefix); err != nil {
				return fmt.Errorf("bulk update: %w", err)
			}
			if _, err := pool.Exec(ctx, `DELETE FROM contacts WHERE organization_id IN ($1, $2) AND phone IN ($3 || '01', $3 || '02', $3 || '05')`,
				org, other, prefix); err != nil {
				return fmt.Errorf("bulk delete: %w", err)
			}
		}
	}
	return nil
}

// totalsMatchRows compares org's totals with a count of its rows in one snapshot.
func totalsMatchRows(ctx context.Context, pool *pgxpool.Pool, org uuid.UUID) error {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only
	var totals, rows store.Counts
	err = tx.QueryRow(ctx, `SELECT total, textable, opted_out FROM contact_totals WHERE organization_id = $1`, org).
		Scan(&totals.Total, &totals.Textable, &totals.OptedOut)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	err = tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE is_textable IS TRUE), count(*) FILTER (WHERE is_opted_in IS FALSE)
		FROM contacts WHERE organization_id = $1`, org).Scan(&rows.Total, &rows.Textable, &rows.OptedOut)
	if err != nil {
		return err
	}
	if totals != rows {
		return fmt.Errorf("totals %+v, rows %+v in one snapshot", totals, rows)
	}
	return nil
}

// newPoolOf is a pool of up to conns connections on a new database with the contacts schema.
func newPoolOf(t *testing.T, conns int) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, pgtest.NewDatabase(t), "contacts", pgdb.WithMaxConns(conns))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgdb.Migrate(ctx, pool, "contacts", migrations.FS, migrations.With...))
	return pool
}

// skipLookups queues no phone lookup.
type skipLookups struct{}

func (skipLookups) EnqueueTx(context.Context, pgx.Tx, uuid.UUID, uuid.UUID, string, time.Time) error {
	return nil
}
