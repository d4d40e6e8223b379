package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// The totals follow every kind of write (bulk and single inserts, updates of textability and
// consent, deletions) for each organization apart: textable is isTextable true (a pending
// lookup is not), opted out is isOptedIn false; they equal a count of the rows.
func TestTotalsFollowEveryWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	st := store.New(pool)
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
