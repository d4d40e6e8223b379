package e2e

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Rules of the spec no other test checked (issue 25, "Rules no test checks").

// TestReplyAtNightIsSentAtOnce: "The reply is delivered immediately regardless of quiet
// hours": a reply at 03:00 in the recipient's zone is handed to the carrier at once, not held
// for the morning as a campaign's message would be.
func TestReplyAtNightIsSentAtOnce(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550170", 5)
	night := zoneWhere(3)
	res := tn.do("POST", "/api/contacts", map[string]any{"phone": "+12025550143", "firstName": "Owl", "timezone": night})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	id := res.JSON(t)["id"].(string)
	eventually(t, 15*time.Second, "phone lookup", func() bool {
		return tn.do("GET", "/api/contacts/"+id, nil).JSON(t)["isTextable"] == true
	})
	require.Contains(t, []int{3, 4}, localHour(t, night), "the recipient's night")

	res = tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "Still up?"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	log := res.JSON(t)["messageLog"].(map[string]any)
	assert.Equal(t, "sent", log["status"], "handed to the carrier at night")
	assert.NotNil(t, log["sentAt"])
	msgs := tn.thread("+12025550143")
	require.Len(t, msgs, 1)
	assert.Contains(t, []any{"sent", "delivered"}, msgs[0]["status"])
}

// TestReplyNormalizeTextFalseKeepsText: normalizeText false sends the text as written (smart
// quotes, dashes, non-ASCII letters); the default replaces them (TestInboundThreadReplyAndShortLink).
func TestReplyNormalizeTextFalseKeepsText(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550171", 5)
	tn.contact("+12025550143", "Zoë", true)
	const text = "It\u2019s \u201cfine\u201d \u2014 Zo\u00eb"
	res := tn.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": text, "normalizeText": false})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, text, res.JSON(t)["messageLog"].(map[string]any)["message"])
	msgs := tn.thread("+12025550143")
	require.Len(t, msgs, 1)
	assert.Equal(t, text, msgs[0]["message"], "stored as sent")
}

// TestThreadMessagesDefaultTo50: GET .../messages without limit answers 50 messages, newest
// first, and a cursor to the rest.
func TestThreadMessagesDefaultTo50(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550172", 0)
	for i := range 53 {
		e.text(tn.number, "+12025550143", "m"+strconv.Itoa(i))
	}
	res := tn.do("GET", "/api/conversations/%2B12025550143/messages", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	page := res.JSON(t)
	msgs := page["messages"].([]any)
	require.Len(t, msgs, 50)
	assert.Equal(t, "m52", msgs[0].(map[string]any)["message"], "newest first")
	require.NotEmpty(t, page["cursor"])
	res = tn.do("GET", "/api/conversations/%2B12025550143/messages?cursor="+url.QueryEscape(page["cursor"].(string)), nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Len(t, res.JSON(t)["messages"], 3, "the rest")
}

// TestCampaignsAndPollsListNewestFirst: both lists are ordered by creation, newest first.
func TestCampaignsAndPollsListNewestFirst(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550173", 0)
	var campaigns, polls []string
	for _, name := range []string{"first", "second", "third"} {
		c := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{"name": name}), http.StatusCreated)
		campaigns = append([]string{c.str("id")}, campaigns...)
		polls = append([]string{tn.createPoll(pollBody(name))["id"].(string)}, polls...)
	}
	ids := func(path string) []string {
		t.Helper()
		res := tn.do("GET", path, nil)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		var list []map[string]any
		require.NoError(t, jsonUnmarshal(res.Body, &list))
		var out []string
		for _, item := range list {
			out = append(out, item["id"].(string))
		}
		return out
	}
	assert.Equal(t, campaigns, ids("/api/campaigns"), "campaigns newest first")
	assert.Equal(t, polls, ids("/api/polls"), "polls newest first")
}

// TestTopCampaignsDefaultTo10: without limit, top-campaigns answers the 10 best of 12
// completed campaigns of the default window. The campaigns are seeded into analytics' own
// table, as twelve real sends would only make the test slow.
func TestTopCampaignsDefaultTo10(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("", 0)
	ctx := context.Background()
	db, err := pgxpool.New(ctx, e.dsn)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	_, err = db.Exec(ctx, `INSERT INTO analytics.campaigns (organization_id, id, version, name, status, total_count,
			created_at, created_day, completed_at, sent, delivered)
		SELECT $1, gen_random_uuid(), 0, 'c' || i, 'completed', 10, now() - interval '1 day',
			(now() AT TIME ZONE 'America/Chicago')::date - 1, now(), 10, i - 1
		FROM generate_series(1, 12) AS i`, tn.org)
	require.NoError(t, err)

	top := list(t, tn.analytics("top-campaigns"))
	require.Len(t, top, 10)
	assert.Equal(t, "c12", top[0]["name"], "best delivery rate first")
	assert.Equal(t, "c3", top[9]["name"])
	assert.Len(t, list(t, tn.analytics("top-campaigns?limit=11")), 11, "the default, not the data, stopped at 10")
}
