package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	st := store.New(pool)
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
