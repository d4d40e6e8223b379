package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
	"github.com/chorus-sms/chorus/services/contacts/migrations"
)

// The totals count the organization's contacts only: textable is isTextable true (a pending
// lookup is not), opted out is isOptedIn false.
func TestTotalsCountOneOrganization(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, pgtest.NewDatabase(t), "contacts")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgdb.Migrate(ctx, pool, "contacts", migrations.FS, migrations.With...))
	org, other := uuid.New(), uuid.New()
	_, err = pool.Exec(ctx, `INSERT INTO contacts (id, organization_id, phone, is_textable, is_opted_in) VALUES
		(gen_random_uuid(), $1, '+12025550101', true, true),
		(gen_random_uuid(), $1, '+12025550102', true, false),
		(gen_random_uuid(), $1, '+12025550103', NULL, true),
		(gen_random_uuid(), $1, '+12025550104', false, false),
		(gen_random_uuid(), $2, '+12025550101', true, false)`, org, other)
	require.NoError(t, err)
	got, err := store.New(pool).Totals(ctx, org)
	require.NoError(t, err)
	assert.Equal(t, store.Counts{Total: 4, Textable: 2, OptedOut: 2}, got)
}
