package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// The reconciler fails a message only while it is still "sending" from a claim before the
// cutoff: one the carrier answered meanwhile, or one claimed since, is left alone.
func TestAdvanceStuckOnlyTakesMessagesStillStuck(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	org := uuid.New()
	insert := func(status string, created time.Time) *store.Message {
		m := outgoing(org, "+12025550143")
		m.Status, m.CreatedAt = status, created
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { _, err := st.InsertOutgoing(ctx, tx, m); return err }))
		return m
	}
	old := time.Now().Add(-time.Hour)
	stuck := insert(store.StatusSending, old)
	answered := insert(store.StatusSending, old)
	advance(t, st, answered.ID, store.StatusSent)
	reclaimed := insert(store.StatusQueued, old)
	claimed, err := st.Claim(ctx, reclaimed.ID, time.Now())
	require.NoError(t, err)
	require.True(t, claimed)

	cutoff := time.Now().Add(-time.Minute)
	list, err := st.StuckSending(ctx, cutoff, nil, 10)
	require.NoError(t, err)
	require.Len(t, list, 1, "only the message claimed before the cutoff and still sending")
	assert.Equal(t, stuck.ID, list[0].ID)

	expire := func(id uuid.UUID) bool {
		var changed bool
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			_, changed, err = st.AdvanceStuck(ctx, tx, id, cutoff, store.StatusChange{Status: store.StatusFailed, ErrorCode: "CARRIER_OUTCOME_UNKNOWN", At: time.Now()})
			return err
		}))
		return changed
	}
	assert.True(t, expire(stuck.ID))
	assert.False(t, expire(answered.ID), "a carrier answer that came in wins")
	assert.False(t, expire(reclaimed.ID), "a message claimed after the cutoff is being sent")
	for id, want := range map[uuid.UUID]string{stuck.ID: store.StatusFailed, answered.ID: store.StatusSent, reclaimed.ID: store.StatusSending} {
		got, err := st.Message(ctx, org, id)
		require.NoError(t, err)
		assert.Equal(t, want, got.Status)
	}
}

// A billable message with a hold that left "sending" is settled until marked; nothing else is.
func TestUnsettledListsFinalBillableMessagesWithAHold(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	org := uuid.New()
	insert := func(billable bool, hold string) *store.Message {
		m := outgoing(org, "+12025550143")
		m.Billable, m.HoldID = billable, hold
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { _, err := st.InsertOutgoing(ctx, tx, m); return err }))
		return m
	}
	sent := insert(true, "h1")
	advance(t, st, sent.ID, store.StatusSent)
	failed := insert(true, "h2")
	advance(t, st, failed.ID, store.StatusFailed)
	settled := insert(true, "h3")
	advance(t, st, settled.ID, store.StatusDelivered)
	require.NoError(t, st.MarkSettled(ctx, settled.ID))
	insert(true, "h4") // still sending
	free := insert(false, "")
	advance(t, st, free.ID, store.StatusDelivered)

	list, err := st.Unsettled(ctx, time.Now().Add(time.Second), 10)
	require.NoError(t, err)
	var ids []uuid.UUID
	for _, m := range list {
		ids = append(ids, m.ID)
	}
	assert.ElementsMatch(t, []uuid.UUID{sent.ID, failed.ID}, ids)
	list, err = st.Unsettled(ctx, time.Now().Add(-time.Minute), 10)
	require.NoError(t, err)
	assert.Empty(t, list, "a settle under way is given time to finish")
}

func advance(t *testing.T, st *store.Store, id uuid.UUID, status string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		_, changed, err := st.AdvanceStatus(ctx, tx, id, store.StatusChange{Status: status, At: time.Now()})
		require.True(t, changed)
		return err
	}))
}
