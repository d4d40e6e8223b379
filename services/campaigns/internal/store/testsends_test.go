package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
	"github.com/chorus-sms/chorus/services/campaigns/migrations"
)

// Concurrent takes never exceed the allowance; a day is a UTC day; a give-back frees copies.
func TestTestSendAllowanceIsTakenAtomically(t *testing.T) {
	ctx := context.Background()
	st := store.New(pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...))
	org := uuid.New()
	day := time.Date(2026, 5, 1, 23, 30, 0, 0, time.UTC)
	var taken atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := st.TakeTestSends(ctx, org, day, 7, 50)
			assert.NoError(t, err)
			if ok {
				taken.Add(7)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 49, taken.Load(), "7 takes of 7 fit in 50")

	ok, err := st.TakeTestSends(ctx, org, day, 1, 50)
	require.NoError(t, err)
	assert.True(t, ok, "the 50th copy")
	ok, err = st.TakeTestSends(ctx, org, day, 1, 50)
	require.NoError(t, err)
	assert.False(t, ok, "none left")
	require.NoError(t, st.GiveBackTestSends(ctx, org, day, 2))
	ok, err = st.TakeTestSends(ctx, org, day, 2, 50)
	require.NoError(t, err)
	assert.True(t, ok, "given back")

	ok, err = st.TakeTestSends(ctx, org, day.Add(time.Hour), 50, 50) // 00:30 UTC the next day
	require.NoError(t, err)
	assert.True(t, ok, "a new UTC day")
	ok, err = st.TakeTestSends(ctx, uuid.New(), day, 51, 50)
	require.NoError(t, err)
	assert.False(t, ok, "more than the allowance at once")
}
