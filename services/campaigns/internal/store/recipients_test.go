package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

// An unsendable recipient is counted failed once when the audience is resolved, costs
// nothing, and is never handed to messaging.
func TestUnsendableRecipientIsFailedNotQueued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := newStore(t)
	c := pendingCampaign(t, st)
	org := c.OrgID
	good := store.Recipient{ContactID: uuid.New(), Phone: "+12025550101", Body: "Hi Ada", Credits: 1}
	empty := store.Recipient{ContactID: uuid.New(), Phone: "+12025550102", Body: "", Credits: 1, Unsendable: store.UnsentEmptyText}
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
	unqueued := unqueued(t, st, c.ID, false)
	require.Len(t, unqueued, 1)
	assert.Equal(t, good.ContactID, unqueued[0].ContactID)
}

// The queue resumes after the last batch messaging stored, whatever order runs mark their
// batches in, and the samples' cursor and the rest's move apart.
func TestUnqueuedResumesAfterTheQueueCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newStore(t)
	c := pendingCampaign(t, st)
	org := c.OrgID
	rs := make([]store.Recipient, 5)
	for i := range rs {
		rs[i] = store.Recipient{ContactID: uuid.Must(uuid.NewV7()), Phone: fmt.Sprintf("+1202555010%d", i), Body: "Hi", Credits: 1}
	}
	require.NoError(t, st.AddRecipients(ctx, org, c.ID, rs))
	_, err := pool.Exec(ctx, `UPDATE recipients SET variant = 'A' WHERE contact_id = $1`, rs[1].ContactID)
	require.NoError(t, err)
	ids := func(samples bool) []uuid.UUID {
		var out []uuid.UUID
		for _, r := range unqueued(t, st, c.ID, samples) {
			out = append(out, r.ContactID)
		}
		return out
	}
	var sizes []int
	require.NoError(t, st.EachUnqueued(ctx, c.ID, false, 3, func(b []store.Recipient) error { sizes = append(sizes, len(b)); return nil }))
	assert.Equal(t, []int{3, 1}, sizes, "batches of the size asked, the last with the remainder")
	stop := errors.New("stop")
	calls := 0
	err = st.EachUnqueued(ctx, c.ID, false, 1, func([]store.Recipient) error { calls++; return stop })
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 1, calls, "fn's error ends the walk")
	assert.Equal(t, []uuid.UUID{rs[0].ContactID, rs[2].ContactID, rs[3].ContactID, rs[4].ContactID}, ids(false), "the rest, by contact id, without the sample")
	assert.Equal(t, []uuid.UUID{rs[1].ContactID}, ids(true))

	require.NoError(t, st.MarkQueued(ctx, c.ID, false, rs[2].ContactID))
	require.NoError(t, st.MarkQueued(ctx, c.ID, false, rs[0].ContactID)) // a slower run's earlier batch
	assert.Equal(t, []uuid.UUID{rs[3].ContactID, rs[4].ContactID}, ids(false))
	assert.Equal(t, []uuid.UUID{rs[1].ContactID}, ids(true), "the samples' cursor has not moved")
	require.NoError(t, st.MarkQueued(ctx, c.ID, true, rs[1].ContactID))
	assert.Empty(t, ids(true))
	require.NoError(t, st.MarkQueued(ctx, c.ID, false, rs[4].ContactID))
	assert.Empty(t, ids(false))
}

// unqueued is every recipient EachUnqueued hands out, in order.
func unqueued(t *testing.T, st *store.Store, campaign uuid.UUID, samples bool) []store.Recipient {
	t.Helper()
	var out []store.Recipient
	require.NoError(t, st.EachUnqueued(context.Background(), campaign, samples, 2, func(b []store.Recipient) error {
		out = append(out, b...)
		return nil
	}))
	return out
}

// pendingCampaign stores a pending campaign of a new organization.
func pendingCampaign(t *testing.T, st *store.Store) store.Campaign {
	t.Helper()
	now := time.Now()
	c := store.Campaign{ID: uuid.New(), OrgID: uuid.New(), Name: "c", Status: store.StatusPending, Channel: "text", ForceRoute: "AUTO", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.InTx(context.Background(), func(tx pgx.Tx) error { return st.Insert(context.Background(), tx, &c) }))
	return c
}

// A batch handed again (a retry, a resumed send) keeps the recipients already stored as they
// are and adds the others; the audience cursor only moves forward.
func TestAddRecipientsAgainKeepsWhatIsStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newStore(t)
	c := pendingCampaign(t, st)
	ids := []uuid.UUID{uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())}
	rc := func(i int, body string) store.Recipient {
		return store.Recipient{ContactID: ids[i], Phone: fmt.Sprintf("+1202555020%d", i), Body: body, Credits: 1}
	}
	require.NoError(t, st.AddRecipients(ctx, c.OrgID, c.ID, []store.Recipient{rc(0, "first"), rc(1, "first")}))
	require.NoError(t, st.MoveAudienceCursor(ctx, c.ID, ids[1], false))
	require.NoError(t, st.AddRecipients(ctx, c.OrgID, c.ID, []store.Recipient{rc(1, "again"), rc(2, "again")}))
	require.NoError(t, st.MoveAudienceCursor(ctx, c.ID, ids[0], false)) // a slower write's earlier batch

	bodies := map[uuid.UUID]string{}
	rows, err := pool.Query(ctx, `SELECT contact_id, body FROM recipients WHERE campaign_id = $1`, c.ID)
	require.NoError(t, err)
	var id uuid.UUID
	var body string
	_, err = pgx.ForEachRow(rows, []any{&id, &body}, func() error { bodies[id] = body; return nil })
	require.NoError(t, err)
	assert.Equal(t, map[uuid.UUID]string{ids[0]: "first", ids[1]: "first", ids[2]: "again"}, bodies)
	through, err := st.AudienceCursor(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, ids[1], through, "the cursor never moves back")
}
