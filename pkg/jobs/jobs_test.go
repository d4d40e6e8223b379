package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/assert"
)

// A run the budget ends is snoozed to run again at once (no attempt used); a run that fails
// on its own, or whose job was canceled, answers its error.
func TestResumableSnoozesARunItsBudgetEnded(t *testing.T) {
	waitForEnd := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	var snooze *river.JobSnoozeError
	err := resumable(t.Context(), 10*time.Millisecond, waitForEnd)
	assert.True(t, errors.As(err, &snooze), "got %v", err)
	assert.Zero(t, snooze.Duration)

	failed := errors.New("billing refused")
	assert.Same(t, failed, resumable(t.Context(), time.Minute, func(context.Context) error { return failed }))
	assert.NoError(t, resumable(t.Context(), time.Minute, func(context.Context) error { return nil }))

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = resumable(ctx, time.Minute, waitForEnd)
	assert.ErrorIs(t, err, context.Canceled, "a canceled job is not snoozed")
}

// Only the last attempt's failure gives up, on a live context, with the failure as its cause;
// a snoozed run or an earlier attempt's failure answers as Resumable does.
func TestResumableOrGiveUpGivesUpOnTheLastFailure(t *testing.T) {
	failed := errors.New("contacts unavailable")
	var causes []error
	giveUp := func(ctx context.Context, cause error) error {
		assert.NoError(t, ctx.Err())
		causes = append(causes, cause)
		return nil
	}
	fail := func(context.Context) error { return failed }
	waitForEnd := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

	assert.Same(t, failed, resumableOrGiveUp(t.Context(), time.Minute, false, fail, giveUp))
	var snooze *river.JobSnoozeError
	assert.ErrorAs(t, resumableOrGiveUp(t.Context(), 10*time.Millisecond, true, waitForEnd, giveUp), &snooze)
	assert.NoError(t, resumableOrGiveUp(t.Context(), time.Minute, true, func(context.Context) error { return nil }, giveUp))
	assert.Empty(t, causes)

	assert.NoError(t, resumableOrGiveUp(t.Context(), time.Minute, true, fail, giveUp))
	assert.Equal(t, []error{failed}, causes)
}
