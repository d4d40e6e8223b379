package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/gateway/migrations"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/redistest"
)

// Every route durableRoutes names is a POST route of the contract, so a renamed route cannot
// silently lose its durable keys.
func TestDurableRoutesArePosts(t *testing.T) {
	t.Parallel()
	for route := range durableRoutes {
		assert.Contains(t, strings.Split(allowedMethods(route), ", "), "POST", route)
	}
}

// newKeyStore is a store on a database of its own, migrated as New migrates it, and a Redis
// database of its own.
func newKeyStore(t *testing.T) *idempotencyStore {
	t.Helper()
	_, rdb := redistest.New(t)
	return &idempotencyStore{rdb: rdb, pool: pgtest.SchemaPool(t, Schema, migrations.FS), hold: time.Minute}
}

// A send whose gateway died between running and completed does not hold its key forever:
// once the claim is older than the bound (and its Redis lock gone), a retry of the same
// request takes the key over, while another request under the key is still refused; the
// dead request's late completion changes nothing.
func TestADeadSendsKeyIsTakenOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newKeyStore(t)
	scope := idempotencyScope{org: uuid.New(), user: "ada", key: "k", durable: true}
	fp, other := []byte("request"), []byte("another request")
	dead, rec, err := s.claim(ctx, scope, fp)
	require.NoError(t, err)
	require.Nil(t, rec)
	require.NoError(t, s.rdb.FlushDB(ctx).Err()) // the lock expired

	_, rec, err = s.claim(ctx, scope, fp)
	require.NoError(t, err)
	require.NotNil(t, rec, "within the bound the key is still running")
	assert.False(t, rec.completed())

	_, err = s.pool.Exec(ctx, `UPDATE idempotency_keys SET claimed_at = now() - interval '2 minutes'`)
	require.NoError(t, err)
	_, rec, err = s.claim(ctx, scope, other)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, fp, rec.Fingerprint, "another request does not take the key over")
	retry, rec, err := s.claim(ctx, scope, fp)
	require.NoError(t, err)
	require.Nil(t, rec, "the retry took the key over")

	assert.ErrorIs(t, s.complete(ctx, dead, &idempotencyRecord{Fingerprint: fp, Status: 500}), errNoClaim)
	require.NoError(t, s.complete(ctx, retry, &idempotencyRecord{Fingerprint: fp, Status: 201, ContentType: "application/json", Body: []byte(`{"id":"1"}`)}))
	_, rec, err = s.claim(ctx, scope, fp)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, 201, rec.Status)
	assert.Equal(t, `{"id":"1"}`, string(rec.Body))
}

// A key past its 24 hours is a new request's, and the sweep deletes it.
func TestExpiredKeysAreNewAndSwept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newKeyStore(t)
	old := idempotencyScope{org: uuid.New(), user: "ada", key: "old", durable: true}
	fresh := idempotencyScope{org: old.org, user: "ada", key: "fresh", durable: true}
	for _, scope := range []idempotencyScope{old, fresh} {
		c, _, err := s.claim(ctx, scope, []byte("first"))
		require.NoError(t, err)
		require.NoError(t, s.complete(ctx, c, &idempotencyRecord{Fingerprint: []byte("first"), Status: 200}))
	}
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old'`)
	require.NoError(t, err)

	require.NoError(t, s.sweepOnce(ctx))
	rows, err := s.pool.Query(ctx, `SELECT key FROM idempotency_keys`)
	require.NoError(t, err)
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{"fresh"}, keys)

	_, err = s.pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours'`)
	require.NoError(t, err)
	_, rec, err := s.claim(ctx, fresh, []byte("second"))
	require.NoError(t, err)
	assert.Nil(t, rec, "an expired key is claimed by a new request, unswept or not")
}
