package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
	"github.com/chorus-sms/chorus/services/campaigns/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Counters follow each recipient's status forward only: a repeated, late or out-of-order
// status changes nothing, a failure after the carrier took the message moves it from sent to
// failed, and a withdrawn message (a canceled campaign's, a deleted contact's) is counted
// neither as a failure nor as queued, so the campaign completes.
func TestApplyStatusCountsEachMoveOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...)
	st := store.New(pool)
	org, now := uuid.New(), time.Now()
	c := store.Campaign{ID: uuid.New(), OrgID: org, Name: "c", Status: store.StatusSending, Channel: "text", ForceRoute: "AUTO", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &c) }))
	phones := []string{"+12025550101", "+12025550102", "+12025550103", "+12025550104"}
	var rs []store.Recipient
	for _, p := range phones {
		rs = append(rs, store.Recipient{ContactID: uuid.New(), Phone: p, Body: "hi", Credits: 1})
	}
	require.NoError(t, st.AddRecipients(ctx, org, c.ID, rs))
	total, credits, err := st.ResolveAudience(ctx, org, c.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 4, total)
	assert.EqualValues(t, 4, credits)

	apply := func(who store.Who, status string, counted bool) bool {
		var moved bool
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			moved, err = st.ApplyStatus(ctx, tx, org, c.ID, who, status, counted)
			return err
		}))
		return moved
	}
	// Events name the recipient's contact (the phone they carry is then not read); one
	// published before they did names its phone.
	contact := func(i int) store.Who { return store.Who{Contact: rs[i].ContactID, Phone: "+12025550199"} }
	phone := func(i int) store.Who { return store.Who{Phone: phones[i]} }
	assert.True(t, apply(contact(0), "sent", true))
	assert.False(t, apply(contact(0), "sent", true), "a repeat")
	assert.True(t, apply(contact(0), "delivered", true))
	assert.False(t, apply(phone(0), "sent", true), "late")
	assert.True(t, apply(phone(1), "delivered", true), "delivered before its sent")
	assert.False(t, apply(contact(1), "sent", true))
	assert.True(t, apply(contact(2), "sent", true))
	assert.True(t, apply(contact(2), "failed", true), "failed after the carrier took it")
	assert.True(t, apply(contact(3), "failed", false), "withdrawn")
	assert.False(t, apply(contact(3), "failed", true))
	assert.False(t, apply(store.Who{Phone: "+12025550199"}, "sent", true), "not a recipient")
	assert.False(t, apply(store.Who{Contact: uuid.New(), Phone: phones[3]}, "sent", true), "not a recipient's contact")
	assert.False(t, func() bool {
		var moved bool
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			moved, err = st.ApplyStatus(ctx, tx, uuid.New(), c.ID, contact(3), "sent", true)
			return err
		}))
		return moved
	}(), "another organization's event")

	got, err := st.Get(ctx, org, c.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 2, got.SentCount)
	assert.EqualValues(t, 1, got.FailedCount)
	assert.EqualValues(t, 2, got.DeliveredCount)
	assert.InDelta(t, 100, got.DeliveryRate(), 0.001)
	assert.EqualValues(t, 1, got.WithdrawnCount, "the withdrawn one is neither sent nor failed")
	assert.EqualValues(t, 0, got.QueuedCount(), "nor queued")
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		done, err := st.Complete(ctx, tx, org, c.ID)
		require.NotNil(t, done, "every recipient is sent, failed or withdrawn: complete")
		return err
	}))
}
