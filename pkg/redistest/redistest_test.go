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
	if server.cmd == nil {
		t.Skip("databases of the shared server are claimed in any order")
	}
	again, rdb := New(t)
	require.Equal(t, url, again, "the released database is handed out again")
	assert.Zero(t, rdb.DBSize(context.Background()).Val())
}
