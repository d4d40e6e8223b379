package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/servetest"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
)

// The analytics service runs in a process of its own, SIGKILLed three times at random moments
// while it consumes a campaign's 6,000 events (the stream read, batches half applied, acks not
// sent) and restarted at once, while the producers and the rest of the stack stay up. The
// numbers it ends with are exactly the campaign's: nothing lost, nothing counted twice.
func TestAnalyticsSurvivesKilledProcess(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	shared := map[string]string{
		"CHORUS_ANALYTICS_ADDR": servetest.ClosedAddr(t),
		"CHORUS_DATABASE_URL":   stackDB.NewDatabase(t),
	}
	shared["CHORUS_REDIS_URL"], _ = redistest.New(t)
	local := map[string]string{"CHORUS_STACK_SERVICES": "orgs,contacts,billing,messaging,campaigns,polls,gateway"}
	for k, v := range shared {
		local[k] = v
	}
	e := newMsgEnv(t, local)
	vars := []string{childEnv + "=1", "CHORUS_STACK_SERVICES=analytics"}
	for k, v := range shared {
		vars = append(vars, k+"="+v)
	}
	for _, peer := range []registry.Service{registry.Orgs, registry.Contacts} {
		vars = append(vars, peer.AddrVar+"="+e.st.Addr(peer))
	}
	proc := &child{t: t, vars: vars}
	proc.start()
	t.Cleanup(proc.kill)

	tn := e.newTenant("+13125550200", 0)
	p := newProducers(e.env)
	const n = 2000 // messages: created, sent, then delivered, or failed for every tenth
	campaign := uuid.NewString()
	p.campaign(tn.org, campaign, "Fault", "completed", "2026-02-02T15:00:00Z", 5, n)
	t0 := time.Date(2026, 2, 2, 15, 0, 0, 0, time.UTC)
	var events []outbox.Event
	org := uuid.MustParse(tn.org)
	for i := range n {
		id, created := uuid.NewString(), t0.Add(time.Duration(i)*time.Second)
		final := "delivered"
		if i%10 == 0 {
			final = "failed"
		}
		events = append(events,
			outbox.Event{Type: "message.created", OrgID: org, Payload: &eventsv1.MessageCreated{OrganizationId: tn.org, MessageId: id,
				SourceKind: "campaign", SourceId: campaign, Status: "queued", CreatedAt: timestamppb.New(created)}},
			outbox.Event{Type: "message.status_changed", OrgID: org, Payload: &eventsv1.MessageStatusChanged{OrganizationId: tn.org, MessageId: id,
				SourceKind: "campaign", SourceId: campaign, Status: "sent", OccurredAt: timestamppb.New(created.Add(time.Minute))}},
			outbox.Event{Type: "message.status_changed", OrgID: org, Payload: &eventsv1.MessageStatusChanged{OrganizationId: tn.org, MessageId: id,
				SourceKind: "campaign", SourceId: campaign, Status: final, OccurredAt: timestamppb.New(created.Add(2 * time.Minute))}})
	}
	for len(events) > 0 {
		batch := events[:min(600, len(events))]
		events = events[len(batch):]
		require.NoError(t, pgx.BeginFunc(context.Background(), p.messaging, func(tx pgx.Tx) error {
			return outbox.EnqueueMany(context.Background(), tx, batch)
		}))
	}
	// Progress is read off the facts (status reports leave no processed_events row): each of a
	// message's three events moves its fact one step.
	applied := func() int {
		var k int
		require.NoError(t, p.messaging.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE status <> '')
			+ count(*) FILTER (WHERE status IN ('sent', 'delivered', 'failed')) + count(*) FILTER (WHERE status IN ('delivered', 'failed'))
			FROM analytics.messages`).Scan(&k))
		return k
	}
	last := 0
	for kill := range 3 {
		if last == 3*n {
			break // all applied before this kill: no progress left to wait for
		}
		// Kill once the restarted process has applied more, a random moment later.
		eventually(t, 60*time.Second, "progress before a kill", func() bool { return applied() > last })
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		proc.kill()
		last = applied()
		t.Logf("kill %d after %d of %d events applied", kill+1, last, 3*n+1)
		proc.start()
	}

	const rng2 = "startDate=2026-02-01&endDate=2026-02-03"
	eventually(t, 120*time.Second, "every event applied", func() bool {
		m := tn.analytics("overview?" + rng2).JSON(t)["messages"].(map[string]any)
		return m["delivered"] == float64(n-n/10) && m["failed"] == float64(n/10)
	})
	time.Sleep(2 * time.Second) // anything counted twice would show by now
	ov := tn.analytics("overview?" + rng2).JSON(t)
	assert.Equal(t, map[string]any{"total": float64(n), "sent": float64(n - n/10), "delivered": float64(n - n/10), "failed": float64(n / 10), "received": 0.0}, ov["messages"])
	top := list(t, tn.analytics("top-campaigns?"+rng2))
	require.Len(t, top, 1)
	assert.Equal(t, []any{float64(n), float64(n - n/10), float64(n - n/10), float64(n / 10)},
		[]any{top[0]["totalCount"], top[0]["sentCount"], top[0]["deliveredCount"], top[0]["failedCount"]})
	var sent float64
	for _, h := range tn.analytics("best-send-times?" + rng2).JSON(t)["byHour"].([]any) {
		sent += h.(map[string]any)["totalSent"].(float64)
	}
	assert.Equal(t, float64(n-n/10), sent, fmt.Sprintf("every send in one hour bucket (seed %d)", seed))
}
