package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
	"github.com/chorus-sms/chorus/services/campaigns/migrations"
)

// Every change analytics follows publishes the campaign's snapshot in its own transaction,
// each with a higher version than the one before, so a consumer can keep the latest whatever
// order the events come in; a counter update bumps nothing.
func TestCampaignChangesAreAnnouncedWithRisingVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...)
	st := store.New(pool)
	org, now := uuid.New(), time.Now()
	c := store.Campaign{ID: uuid.New(), OrgID: org, Name: "Spring", Status: store.StatusPending, Channel: "text", ForceRoute: "AUTO", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &c) }))
	require.NoError(t, st.AddRecipients(ctx, org, c.ID, []store.Recipient{{ContactID: uuid.New(), Phone: "+12025550101", Body: "hi", Credits: 1}}))
	_, _, err := st.ResolveAudience(ctx, org, c.ID)
	require.NoError(t, err)
	moved, err := st.Advance(ctx, org, c.ID, store.StatusPending, store.StatusQueued, 1)
	require.NoError(t, err)
	require.True(t, moved)
	moved, err = st.Advance(ctx, org, c.ID, store.StatusPending, store.StatusQueued, 1)
	require.NoError(t, err)
	require.False(t, moved, "no move, no event")
	_, err = st.Advance(ctx, org, c.ID, store.StatusQueued, store.StatusSending, 0)
	require.NoError(t, err)
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := st.ApplyStatus(ctx, tx, org, c.ID, store.Who{Phone: "+12025550101"}, "delivered", true); err != nil {
			return err
		}
		done, err := st.Complete(ctx, tx, org, c.ID)
		require.NotNil(t, done)
		return err
	}))

	rows, err := pool.Query(ctx, `SELECT payload FROM outbox WHERE event_type = $1 ORDER BY event_id`, store.EventChanged)
	require.NoError(t, err)
	payloads, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	require.NoError(t, err)
	var statuses []string
	var versions []int64
	var last eventsv1.CampaignChanged
	for _, p := range payloads {
		require.NoError(t, proto.Unmarshal(p, &last))
		statuses, versions = append(statuses, last.GetStatus()), append(versions, last.GetVersion())
	}
	assert.Equal(t, []string{"pending", "pending", "queued", "sending", "completed"}, statuses)
	assert.Equal(t, []int64{0, 1, 2, 3, 4}, versions, "the counter update in between bumps no version")
	assert.Equal(t, "Spring", last.GetName())
	assert.EqualValues(t, 1, last.GetTotalCount())
	assert.Equal(t, c.ID.String(), last.GetCampaignId())
	assert.NotNil(t, last.GetCompletedAt())
	assert.Equal(t, now.UnixMicro(), last.GetCreatedAt().AsTime().UnixMicro())
}
