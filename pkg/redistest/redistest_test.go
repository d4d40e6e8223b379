package redistest

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Close()
	os.Exit(code)
}

// Two tests never share a database, and none of them is the shared server's.
func TestEachTestHasItsOwnDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	urlA, a := New(t)
	urlB, b := New(t)
	assert.NotEqual(t, urlA, urlB)
	assert.NotContains(t, urlA, sharedAddr+"/0")
	require.NoError(t, a.Set(ctx, "k", "a", 0).Err())
	assert.Zero(t, b.Exists(ctx, "k").Val(), "b sees a's key")
}

// A finished test's database is emptied before the next test gets it. Serial: a parallel test
// could take the released database first.
func TestAReleasedDatabaseIsEmptied(t *testing.T) {
	var url string
	t.Run("writer", func(t *testing.T) {
		var rdb *redis.Client
		url, rdb = New(t)
		require.NoError(t, rdb.Set(context.Background(), "left", "x", 0).Err())
	})
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	released := redis.NewClient(opts)
	defer released.Close()
	assert.Zero(t, released.DBSize(context.Background()).Val(), "the released database is empty")
	if server.cmd != nil {
		// This process's own server hands the lowest free database out again; the shared
		// server's fallback claims databases in any order.
		again, _ := New(t)
		assert.Equal(t, url, again, "the released database is handed out again")
	}
}
