package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
	"github.com/chorus-sms/chorus/services/campaigns/internal/testdb"
)

// An unsendable recipient is counted failed once when the audience is resolved, costs
// nothing, and is never handed to messaging.
func TestUnsendableRecipientIsFailedNotQueued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.Pool(t)
	st := store.New(pool)
	org, now := uuid.New(), time.Now()
	c := store.Campaign{ID: uuid.New(), OrgID: org, Name: "c", Status: store.StatusPending, Channel: "text", ForceRoute: "AUTO", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &c) }))
	good := store.Recipient{ContactID: uuid.New(), Phone: "+12025550101", Body: "Hi Ada", Credits: 1}
	empty := store.Recipient{ContactID: uuid.New(), Phone: "+12025550102", Body: "", Credits: 1, Unsendable: true}
	require.NoError(t, st.AddRecipients(ctx, org, c.ID, []store.Recipient{good, empty}))
	for range 2 { // a repeated resolution counts nothing twice
		total, credits, err := st.ResolveAudience(ctx, org, c.ID)
		require.NoError(t, err)
		assert.EqualValues(t, 2, total)
		assert.EqualValues(t, 1, credits, "the unsendable one costs nothing")
	}
	got, err := st.Get(ctx, org, c.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 1, got.FailedCount)
	unqueued, err := st.Unqueued(ctx, c.ID, 10, false)
	require.NoError(t, err)
	require.Len(t, unqueued, 1)
	assert.Equal(t, good.ContactID, unqueued[0].ContactID)
}
