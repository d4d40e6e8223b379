package orgs_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/services/orgs"
)

// Orgs runs no River jobs and publishes no events: its schema holds its own tables only.
func TestOrgsSchemaHoldsNoJobOrOutboxTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := migrated.NewDatabase(t)
	redisURL, _ := redistest.New(t)
	svc, err := orgs.New(ctx, config(dsn, redisURL))
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })

	var memberships, riverJob, outbox *string
	require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass('orgs.memberships')::text,
		to_regclass('orgs.river_job')::text, to_regclass('orgs.outbox')::text`).Scan(&memberships, &riverJob, &outbox))
	assert.NotNil(t, memberships, "orgs' own tables are there")
	assert.Nil(t, riverJob, "no River tables")
	assert.Nil(t, outbox, "no outbox")
}
