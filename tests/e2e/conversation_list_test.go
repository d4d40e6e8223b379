package e2e

import (
	"context"
	"net/http"
	"sort"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConversationListAnswersEveryThread: without filters GET /api/conversations answers all
// non-archived threads (the spec), not a first page: 1,203 threads, more than two of the pages
// the gateway reads from messaging, with runs of threads sharing one last-message time so a
// page boundary falls inside a tie. Each thread comes once, most recent first, then by phone.
func TestConversationListAnswersEveryThread(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.newMember("read")
	ctx := context.Background()
	db, err := pgxpool.New(ctx, e.dsn)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	// Threads are rows of messaging's own table: seeded directly, as a thousand inbound
	// webhooks would only make the test slow. Every 10th is archived; 7 share each time.
	_, err = db.Exec(ctx, `INSERT INTO messaging.conversations
		(organization_id, phone, last_message, last_message_at, last_direction, is_archived)
		SELECT $1, '+1202' || lpad(i::text, 7, '0'), 'hello ' || i, now() - (i / 7) * interval '1 second', 'incoming', i % 10 = 0
		FROM generate_series(1, 1336) AS i`, c.org)
	require.NoError(t, err)
	const visible = 1336 - 1336/10

	res := c.do("GET", "/api/conversations", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	var list []map[string]any
	require.NoError(t, jsonUnmarshal(res.Body, &list))
	require.Equal(t, visible, len(list), "every non-archived thread")
	seen := map[string]bool{}
	for _, th := range list {
		p := th["phoneNumber"].(string)
		assert.False(t, seen[p], "%s answered twice", p)
		seen[p] = true
		assert.Equal(t, false, th["isArchived"])
	}
	assert.True(t, sort.SliceIsSorted(list, func(i, j int) bool {
		a, b := list[i]["lastMessageAt"].(string), list[j]["lastMessageAt"].(string)
		if a != b {
			return a > b
		}
		return list[i]["phoneNumber"].(string) < list[j]["phoneNumber"].(string)
	}), "most recent first, then by phone")

	res = c.do("GET", "/api/conversations?limit=777", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	var capped []map[string]any
	require.NoError(t, jsonUnmarshal(res.Body, &capped))
	assert.Equal(t, list[:777], capped, "limit (beyond the spec) keeps the most recent, across a page boundary")

	res = c.do("GET", "/api/conversations?includeArchived=true", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	require.NoError(t, jsonUnmarshal(res.Body, &list))
	assert.Len(t, list, 1336, "archived threads too")

	res = c.do("GET", "/api/conversations?unread=yes", nil)
	require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t))
	assert.Contains(t, res.ErrFields(t), "unread")

	other := e.newMember("read")
	res = other.do("GET", "/api/conversations", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.JSONEq(t, `[]`, string(res.Body), "another organization's threads are not listed")
}
