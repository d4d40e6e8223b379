package server

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/tenant"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.Close()
	os.Exit(code)
}

// A reader that read the database before a membership change, and writes the cache after the
// change invalidated it, must not put the old level back: a revoked user would keep access for
// the TTL.
func TestACheckThatRacedAChangeDoesNotCacheTheOldLevel(t *testing.T) {
	t.Parallel()
	_, rdb := redistest.New(t)
	c := &accessCache{rdb: rdb, ttl: time.Minute, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	org := uuid.New()

	_, cached, gen := c.get(ctx, org, "u") // reader: miss, notes the generation...
	require.False(t, cached)
	// ...reads "write" from the database; meanwhile the membership is removed:
	require.NoError(t, c.forget(ctx, org, "u"))
	c.set(ctx, org, "u", tenant.AccessWrite, gen) // the reader's late write
	_, cached, _ = c.get(ctx, org, "u")
	assert.False(t, cached, "the stale level was cached after the revocation")

	// Without a race the answer is cached as usual.
	_, _, gen = c.get(ctx, org, "u")
	c.set(ctx, org, "u", tenant.AccessNone, gen)
	level, cached, _ := c.get(ctx, org, "u")
	assert.True(t, cached)
	assert.Equal(t, tenant.AccessNone, level)
}
