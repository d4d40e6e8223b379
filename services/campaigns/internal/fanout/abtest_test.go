package fanout

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

// The decision job waits while its campaign is paused and until its time on this replica's
// clock; a canceled campaign's job ends without deciding, so nothing more is sent.
func TestDecisionJobWaitsForPauseAndTimeAndEndsOnCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, st, _ := newRunner(t)

	now := time.Now()
	a, b := "A", "B"
	c := store.Campaign{ID: uuid.New(), OrgID: uuid.New(), Name: "ab", Status: store.StatusSending, Channel: "text", ForceRoute: "AUTO",
		IsAbTest: true, VariantA: &a, VariantB: &b, Submission: 1, CreatedAt: now, UpdatedAt: now, StartedAt: &now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &c) }))
	bodyB, creditsB := "B", int32(1)
	var rs []store.Recipient // 20: the least that gives two samples (one recipient each)
	for i := range 20 {
		rs = append(rs, store.Recipient{ContactID: uuid.New(), Phone: fmt.Sprintf("+120255501%02d", i), Body: "A", Credits: 1, BodyB: &bodyB, CreditsB: &creditsB})
	}
	require.NoError(t, st.AddRecipients(ctx, c.OrgID, c.ID, rs))
	_, err := st.DrawSamples(ctx, c.OrgID, c.ID)
	require.NoError(t, err)
	_, err = st.SetDecideAt(ctx, c.OrgID, c.ID, now.Add(time.Hour))
	require.NoError(t, err)

	w := &decideWorker{r: r}
	job := &river.Job[decideArgs]{
		JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: sendAttempts},
		Args:   decideArgs{sendArgs{CampaignID: c.ID, OrgID: c.OrgID, Submission: 1}},
	}
	snoozed := func(err error) time.Duration {
		var snooze *river.JobSnoozeError
		require.True(t, errors.As(err, &snooze), "%v", err)
		return snooze.Duration
	}
	assert.InDelta(t, time.Hour.Seconds(), snoozed(w.Work(ctx, job)).Seconds(), 60, "too early: waits for its time")

	setStatus := func(status string, canceled bool) {
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			cur, err := st.Lock(ctx, tx, c.OrgID, c.ID)
			if err != nil {
				return err
			}
			cur.Status = status
			if canceled {
				cur.CanceledAt, cur.CompletedAt = &now, &now
			}
			return st.Save(ctx, tx, &cur)
		}))
	}
	setStatus(store.StatusPaused, false)
	assert.Equal(t, pausedRecheck, snoozed(w.Work(ctx, job)), "paused: the decision waits")

	setStatus(store.StatusCompleted, true)
	require.NoError(t, w.Work(ctx, job))
	got, _, err := st.GetAbTest(ctx, c.OrgID, c.ID)
	require.NoError(t, err)
	assert.Nil(t, got.Winner, "a canceled test is never decided")
	unsent := 0
	require.NoError(t, st.EachUnqueued(ctx, c.ID, true, 10, func(b []store.Recipient) error { unsent += len(b); return nil }))
	assert.Equal(t, 2, unsent, "nothing more queued (the two samples' recipients were not yet)")
}
