package pgdb_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// uuid.UUID values go to PostgreSQL and come back unchanged, in both protocols, alone, through
// pointers and in arrays; NULL leaves a uuid.UUID as it was and a *uuid.UUID nil, as
// database/sql's Scan did before the codec.
func TestUUIDsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := open(t)
	id := uuid.MustParse("0192f0c4-5b7e-7a3c-9d2e-1f2a3b4c5d6e")
	ids := []uuid.UUID{id, uuid.MustParse("ffffffff-0000-4000-8000-000000000001")}

	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		var text string
		var back uuid.UUID
		var ptr *uuid.UUID
		require.NoError(t, pool.QueryRow(ctx, `SELECT $1::uuid::text, $1::uuid, $2::uuid`,
			mode, id, &id).Scan(&text, &back, &ptr), mode)
		assert.Equal(t, id.String(), text, mode)
		assert.Equal(t, id, back, mode)
		require.NotNil(t, ptr, mode)
		assert.Equal(t, id, *ptr, mode)

		kept := id
		var none *uuid.UUID = &id
		require.NoError(t, pool.QueryRow(ctx, `SELECT NULL::uuid, NULL::uuid`, mode).Scan(&kept, &none), mode)
		assert.Equal(t, id, kept, mode)
		assert.Nil(t, none, mode)

		var isNull bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT $1::uuid IS NULL`, mode, (*uuid.UUID)(nil)).Scan(&isNull), mode)
		assert.True(t, isNull, mode)
	}

	// Arrays (the simple protocol cannot send a []uuid.UUID, with or without the codec).
	var backs []uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT $1::uuid[]`, ids).Scan(&backs))
	assert.Equal(t, ids, backs)

	var bad uuid.UUID
	err := pool.QueryRow(ctx, `SELECT 'x'::text`).Scan(&bad)
	assert.Error(t, err, "a text column that is no uuid does not scan")
}
