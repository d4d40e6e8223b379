package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/quiethours"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// zoneWhere is a fixed-offset zone whose local time now is in quiet hours (night) or not.
func zoneWhere(t *testing.T, night bool) string {
	t.Helper()
	for off := -12; off <= 14; off++ {
		tz := fmt.Sprintf("Etc/GMT%+d", -off)
		if w := quiethours.Wait(tz, time.Now()); (w > time.Hour) == night && (w == 0) == !night {
			return tz
		}
	}
	t.Fatal("no such zone")
	return ""
}

// A bulk batch is dispatched in group jobs: the messages that may go now are sent, and one
// that must wait (its recipient's night) goes on as a send job of its own, scheduled for the
// morning, while the group's job completes.
func TestGroupSendsWhatMayGoAndQueuesTheRestOnItsOwn(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.dispatcher(nil, 100, time.Hour)
	start(t, d)
	day, night := zoneWhere(t, false), zoneWhere(t, true)
	msgs := make([]*store.Message, 5)
	for i := range msgs {
		msgs[i] = &store.Message{
			ID: uuid.Must(uuid.NewV7()), OrgID: f.org, ContactPhone: fmt.Sprintf("+1202555%04d", 170+i), OurNumber: f.number,
			Body: "Hello", Status: store.StatusQueued, Provider: carrier.SandboxName, SourceKind: store.SourceSystem,
			SourceID: "g1", DedupeKey: fmt.Sprintf("g1:%d", i), RecipientTimezone: day, CreatedAt: time.Now(),
		}
	}
	msgs[2].RecipientTimezone = night
	require.NoError(t, f.store.InsertBulk(ctx, msgs, time.Now()))
	d.WakeExpander()

	status := func(id uuid.UUID) string {
		m, err := f.store.Message(ctx, f.org, id)
		if err != nil {
			return ""
		}
		return m.Status
	}
	require.Eventually(t, func() bool {
		for i, m := range msgs {
			if i != 2 && status(m.ID) != store.StatusSent {
				return false
			}
		}
		return f.count(`SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'completed'`, sendGroupArgs{}.Kind()) == 1
	}, 20*time.Second, 50*time.Millisecond, "the day recipients' messages sent, and the group done")
	assert.Equal(t, store.StatusQueued, status(msgs[2].ID), "the night recipient's message waits")
	var due time.Time
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT scheduled_at FROM river_job WHERE kind = $1 AND args->>'message_id' = $2 AND state = 'scheduled'`,
		sendArgs{}.Kind(), msgs[2].ID.String()).Scan(&due))
	assert.WithinDuration(t, time.Now().Add(quiethours.Wait(night, time.Now())), due, time.Minute, "its own job, due when its night ends")
}

// A group's message whose dispatch fails (the carrier is down) goes back to the queue as a
// send job of its own, retried with a send job's attempts; nothing is sent twice.
func TestGroupMessageThatFailsIsRetriedOnItsOwn(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tw, live := newTwilio(t)
	tw.fail.Store(true)
	d := f.dispatcher(live, 100, time.Hour)
	msgs := []*store.Message{{
		ID: uuid.Must(uuid.NewV7()), OrgID: f.org, ContactPhone: "+12025550180", OurNumber: f.number, Body: "Hello",
		Status: store.StatusQueued, Provider: "twilio", SourceKind: store.SourceSystem, SourceID: "g2", DedupeKey: "g2:0", CreatedAt: time.Now(),
	}}
	require.NoError(t, f.store.InsertBulk(ctx, msgs, time.Now()))
	require.NoError(t, d.expandDue(ctx))

	later := d.dispatchGroup(ctx, sendGroupArgs{OrgID: f.org, Number: f.number, MessageIDs: []uuid.UUID{msgs[0].ID}})
	require.Len(t, later, 1)
	args, ok := later[0].Args.(sendArgs)
	require.True(t, ok)
	assert.Equal(t, msgs[0].ID, args.MessageID)
	assert.True(t, later[0].InsertOpts.ScheduledAt.After(time.Now()), "after a pause")
	m, err := f.store.Message(ctx, f.org, msgs[0].ID)
	require.NoError(t, err)
	assert.Equal(t, store.StatusQueued, m.Status, "not claimed: free to be sent by its retry")
	assert.Zero(t, tw.sends.Load())
}
