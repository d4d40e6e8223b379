package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
	"github.com/chorus-sms/chorus/services/contacts/migrations"
)

// SetTextable is what makes lookup jobs safe to run late or twice.
func TestMain(m *testing.M) { pgtest.Main(m) }

func TestSetTextableOnlyFillsAnUnknownValueForTheCurrentPhone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	st := newStore(t, pool)
	org, id := uuid.New(), uuid.New()
	_, err := pool.Exec(ctx, `INSERT INTO contacts (id, organization_id, phone) VALUES ($1, $2, '+12025550143')`, id, org)
	require.NoError(t, err)

	changed, err := st.SetTextable(ctx, org, id, "+12025550199", true)
	require.NoError(t, err)
	assert.False(t, changed, "a job for a phone the contact no longer has is stale")
	changed, err = st.SetTextable(ctx, uuid.New(), id, "+12025550143", true)
	require.NoError(t, err)
	assert.False(t, changed, "another organization's job changes nothing")

	changed, err = st.SetTextable(ctx, org, id, "+12025550143", false)
	require.NoError(t, err)
	assert.True(t, changed)
	changed, err = st.SetTextable(ctx, org, id, "+12025550143", true)
	require.NoError(t, err)
	assert.False(t, changed, "a known value (e.g. set by an inbound message) is not overwritten")

	c, err := st.Get(ctx, org, id)
	require.NoError(t, err)
	require.NotNil(t, c.IsTextable)
	assert.False(t, *c.IsTextable)
}

// Lookup results completing at the same time are written together: each is recorded or
// refused on its own, as it would be alone, and the totals count each recorded one.
func TestConcurrentLookupResultsAreEachRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	st := newStore(t, pool)
	orgs := []uuid.UUID{uuid.New(), uuid.New()}
	const n = 60
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
		_, err := pool.Exec(ctx, `INSERT INTO contacts (id, organization_id, phone) VALUES ($1, $2, $3)`,
			ids[i], orgs[i%2], fmt.Sprintf("+1303555%04d", i))
		require.NoError(t, err)
	}
	changed := make([]bool, n)
	var g errgroup.Group
	for i := range ids {
		g.Go(func() error {
			phone := fmt.Sprintf("+1303555%04d", i)
			if i%10 == 9 {
				phone = "+12025550199" // a stale job: the contact has another phone now
			}
			var err error
			changed[i], err = st.SetTextable(ctx, orgs[i%2], ids[i], phone, i%3 != 0)
			return err
		})
	}
	require.NoError(t, g.Wait())

	var textable int32
	for i, id := range ids {
		c, err := st.Get(ctx, orgs[i%2], id)
		require.NoError(t, err)
		if i%10 == 9 {
			assert.False(t, changed[i], "contact %d: a stale result changes nothing", i)
			assert.Nil(t, c.IsTextable, "contact %d", i)
			continue
		}
		assert.True(t, changed[i], "contact %d", i)
		require.NotNil(t, c.IsTextable, "contact %d", i)
		assert.Equal(t, i%3 != 0, *c.IsTextable, "contact %d", i)
		if *c.IsTextable && i%2 == 0 {
			textable++
		}
	}
	got, err := st.Totals(ctx, orgs[0])
	require.NoError(t, err)
	assert.Equal(t, store.Counts{Total: n / 2, Textable: textable}, got)
}

// newStore is a Store over pool and an in-order pool configured as pool is.
func newStore(t *testing.T, pool *pgxpool.Pool) *store.Store {
	t.Helper()
	inOrder, err := store.OpenInOrder(context.Background(), pool, 4)
	require.NoError(t, err)
	t.Cleanup(inOrder.Close)
	return store.New(pool, inOrder)
}

// newPool is a pool on a new database with the contacts schema migrated.
func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, pgtest.NewDatabase(t), "contacts")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgdb.Migrate(ctx, pool, "contacts", migrations.FS, migrations.With...))
	return pool
}
