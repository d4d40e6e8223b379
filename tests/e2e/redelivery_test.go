package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/outbox"
)

// Every event of messaging's stream delivered a second time, after a campaign to 20 contacts
// completed (some failed and undelivered), two of them replied, and all was counted: the
// campaign's counters and the organization's analytics are the same numbers. Campaigns and analytics apply message status
// reports without a record of the events they processed, so this is what keeps them exact
// when an event is delivered again.
func TestEveryMessagingEventDeliveredTwiceChangesNoNumber(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550190", 100)
	var phones []string
	for i := range 16 {
		phones = append(phones, fmt.Sprintf("+1202555%04d", 2000+i))
	}
	phones = append(phones, "+12025610006", "+12025620006", "+12025710007", "+12025720007") // failed, undelivered
	tn.contacts("twice", phones)

	created := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Twice", "message": "Hi {{firstName}}", "contactFilter": map[string]any{"tags": []string{"twice"}},
		"timezone": zoneWhere(12),
	}), http.StatusCreated)
	id := created.str("id")
	tn.awaitStatus(id, "completed", 90*time.Second)
	counters := func() map[string]any {
		c := tn.getCampaign(id)
		return map[string]any{"sent": c["sentCount"], "failed": c["failedCount"], "delivered": c["displayMetrics"].(map[string]any)["delivered"],
			"replies": c["replyCountExcludingOptouts"]}
	}
	day := time.Now().UTC()
	overview := "overview?startDate=" + day.AddDate(0, 0, -1).Format(time.DateOnly) + "&endDate=" + day.AddDate(0, 0, 1).Format(time.DateOnly)
	messages := func() any { return tn.analytics(overview).JSON(t)["messages"] }
	for _, from := range phones[:2] {
		require.Equal(t, http.StatusOK, e.inbound(tn.number, from, "Thanks!").Status)
	}
	want := map[string]any{"sent": 18.0, "failed": 2.0, "delivered": 16.0, "replies": 2.0}
	eventually(t, 30*time.Second, "the carrier's outcomes counted", func() bool { return assert.ObjectsAreEqual(want, counters()) })
	wantMessages := map[string]any{"total": 20.0, "sent": 18.0, "delivered": 16.0, "failed": 2.0, "received": 2.0}
	eventually(t, 30*time.Second, "analytics counted the campaign", func() bool { return assert.ObjectsAreEqual(wantMessages, messages()) })

	ctx := context.Background()
	opts, err := redis.ParseURL(e.redisURL)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	stream := outbox.StreamName("messaging")
	entries, err := rdb.XRange(ctx, stream, "-", "+").Result()
	require.NoError(t, err)
	// Each message's outcome (its "sent" too, unless the carrier's report overtook the
	// acceptance) is in the stream.
	require.GreaterOrEqual(t, len(statusChanges(t, rdb, tn.org)), 20)
	for _, en := range entries {
		require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: en.Values}).Err())
	}
	eventually(t, 60*time.Second, "every group to take the copies", func() bool {
		groups, err := rdb.XInfoGroups(ctx, stream).Result()
		require.NoError(t, err)
		for _, g := range groups {
			if g.Lag != 0 || g.Pending != 0 {
				return false
			}
		}
		return len(groups) > 0
	})
	assert.Equal(t, want, counters())
	assert.Equal(t, wantMessages, messages())
}
