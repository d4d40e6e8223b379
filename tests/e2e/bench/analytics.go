package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/redistest"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// analyticsZone is every bench organization's zone.
const analyticsZone = "America/Chicago"

// analyticsRun is what the analytics suite was asked for.
type analyticsRun struct {
	messages, orgs, contacts, ingest, n int
}

// benchAnalytics seeds messages messaging rows across orgs organizations over the last 365
// days (a fifth of them in the largest, as 2,000,000 of the 10,000,000), the rollups
// analytics keeps of them, 500 campaigns and contacts of the largest; then times every
// analytics endpoint through the gateway for the largest over the whole 366 days, next to the
// raw GROUP BY of its message rows by local day in the same run; then the rate at which
// analytics applies ingest events of a campaign's messages.
func benchAnalytics(ctx context.Context, ar analyticsRun) error {
	// A Redis database of its own: analytics' consumer groups read the streams from their start.
	redisURL, release, err := redistest.Reserve()
	if err != nil {
		return err
	}
	defer func() { _ = release() }()
	ms, err := startMsgStack(ctx, "chorus_bench_analytics", "http://127.0.0.1:9", map[string]string{"CHORUS_REDIS_URL": redisURL})
	if err != nil {
		return err
	}
	defer ms.close()

	seedStart := time.Now()
	orgIDs := make([]string, ar.orgs)
	for i := range orgIDs {
		o, err := ms.orgs.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: fmt.Sprintf("bench-analytics-%d", i), Timezone: analyticsZone})
		if err != nil {
			return err
		}
		orgIDs[i] = o.GetOrganization().GetId()
	}
	big := orgIDs[0]
	if _, err := ms.orgs.SetMembership(ctx, &orgsv1.SetMembershipRequest{OrganizationId: big, UserSubject: benchUser, Access: orgsv1.Access_ACCESS_READ}); err != nil {
		return err
	}
	bigCount := ar.messages / 5
	if err := seedAnalytics(ctx, ms.pool, orgIDs, ar.messages, bigCount); err != nil {
		return err
	}
	dsn, err := ensureDatabase(ctx, "chorus_bench_analytics", false)
	if err != nil {
		return err
	}
	cpool, err := pgxpool.New(ctx, dsn+"&search_path=contacts,public")
	if err != nil {
		return err
	}
	defer cpool.Close()
	if err := seedContacts(ctx, cpool, big, ar.contacts); err != nil {
		return err
	}
	if _, err := ms.pool.Exec(ctx, `ANALYZE`); err != nil {
		return err
	}
	fmt.Printf("\nanalytics: %d messages across %d organizations, %d in the largest (%d contacts, 500 campaigns); seeded in %s\n",
		ar.messages, ar.orgs, bigCount, ar.contacts, time.Since(seedStart).Round(time.Second))

	tok, err := ms.st.Key.Sign(benchUser, 2*time.Hour)
	if err != nil {
		return err
	}
	c := &apiClient{base: ms.st.HTTPURL, token: tok, org: big, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	loc, err := time.LoadLocation(analyticsZone)
	if err != nil {
		return err
	}
	today := time.Now().In(loc)
	end := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	start := end.AddDate(0, 0, -365)
	rng := "startDate=" + start.Format(time.DateOnly) + "&endDate=" + end.Format(time.DateOnly)
	fmt.Printf("largest organization, the whole 366 days (%s), %d timed requests each, one client\n", rng, ar.n)
	fmt.Printf("%-40s %12s %12s\n", "endpoint (through the gateway)", "p50", "p99")
	worst := time.Duration(0)
	for _, ep := range []struct{ name, path string }{
		{"overview", "overview?" + rng},
		{"trends (messages)", "trends?" + rng},
		{"trends (campaigns)", "trends?metric=campaigns&" + rng},
		{"top-campaigns (limit 100)", "top-campaigns?limit=100&" + rng},
		{"best-send-times", "best-send-times?" + rng},
		{"export (campaigns CSV)", "export?type=campaigns&" + rng},
	} {
		t, err := measure(ar.n, func(int) error { return c.get(ctx, "/api/analytics/"+ep.path) })
		if err != nil {
			return fmt.Errorf("%s: %w", ep.name, err)
		}
		worst = max(worst, t.p99)
		fmt.Printf("%-40s %12s %12s\n", ep.name, t.p50, t.p99)
	}
	// The baseline: what a dashboard without rollups runs, the largest organization's message
	// rows grouped by local day, with an index on (organization_id, created_at) made for it.
	rawN := min(ar.n, 50)
	raw, err := measure(rawN, func(int) error {
		return rawQuery(ctx, ms.pool, `SELECT (m.created_at AT TIME ZONE $2)::date, count(*),
				count(*) FILTER (WHERE status IN ('sent', 'delivered', 'undelivered')), count(*) FILTER (WHERE status = 'delivered'),
				count(*) FILTER (WHERE status = 'failed')
			FROM messaging.messages m WHERE organization_id = $1 AND direction = 'outgoing'
				AND created_at >= $3::date::timestamp AT TIME ZONE $2 AND source_kind NOT IN ('test', 'system')
			GROUP BY 1`, []any{big, analyticsZone, start})
	})
	if err != nil {
		return fmt.Errorf("raw GROUP BY: %w", err)
	}
	fmt.Printf("%-40s %12s %12s   (%d timed)\n", "raw GROUP BY of its message rows by day", raw.p50, raw.p99, rawN)
	fmt.Printf("worst endpoint p99 %s (target: at most 50ms)\n", worst)

	o, err := ms.orgs.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "bench-analytics-ingest", Timezone: analyticsZone})
	if err != nil {
		return err
	}
	return benchIngest(ctx, ms, redisURL, o.GetOrganization().GetId(), ar.ingest)
}

// seedAnalytics inserts the message rows (messaging's table: a tenth replies, the rest
// campaign messages; 85% delivered, 5% undelivered, 5% failed, 5% sent) spread evenly over the
// last 366 days, and the rollups analytics' ingest makes of them (hourly counts, the largest
// organization's campaigns with their outcomes), in bulk SQL: applying every event one by one
// would take hours here, and its rate is measured on its own (benchIngest).
func seedAnalytics(ctx context.Context, pool *pgxpool.Pool, orgs []string, total, big int) error {
	campaigns := make([]string, 500)
	for i := range campaigns {
		campaigns[i] = uuid.NewString()
	}
	span := 365 * 24 * time.Hour // inside the timed 366 local dates whatever the hour
	insert := `INSERT INTO messaging.messages (id, organization_id, direction, contact_phone, our_number, body, status, provider,
			source_kind, source_id, created_at, thread_at)
		SELECT gen_random_uuid(), o.org, 'outgoing', '+1202' || lpad((i % 9999999)::text, 7, '0'), '+13125550000', 'bench',
			(ARRAY['failed', 'undelivered', 'sent', 'delivered', 'delivered', 'delivered', 'delivered', 'delivered', 'delivered', 'delivered',
				'delivered', 'delivered', 'delivered', 'delivered', 'delivered', 'delivered', 'delivered', 'delivered', 'delivered', 'delivered'])[1 + i % 20],
			'sandbox', CASE WHEN i % 10 = 0 THEN 'reply' ELSE 'campaign' END,
			CASE WHEN i % 10 = 0 THEN NULL ELSE ($3::text[])[1 + i % cardinality($3::text[])] END,
			now() - make_interval(secs => (i::float8 / $2) * $4), now() - make_interval(secs => (i::float8 / $2) * $4)
		FROM generate_series(1, $2) i, LATERAL (SELECT ($1::uuid[])[1 + i % cardinality($1::uuid[])] AS org) o`
	if _, err := pool.Exec(ctx, insert, []string{orgs[0]}, big, campaigns, span.Seconds()); err != nil {
		return fmt.Errorf("seed the largest organization's messages: %w", err)
	}
	if rest := total - big; rest > 0 && len(orgs) > 1 {
		smallCampaigns := []string{uuid.NewString()}
		if _, err := pool.Exec(ctx, insert, orgs[1:], rest, smallCampaigns, span.Seconds()); err != nil {
			return fmt.Errorf("seed the other organizations' messages: %w", err)
		}
	}
	if _, err := pool.Exec(ctx, `CREATE INDEX bench_messages_org_created ON messaging.messages (organization_id, created_at)`); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO analytics.message_hours (organization_id, day, hour, total, sent, delivered, undelivered, failed)
		SELECT organization_id, (created_at AT TIME ZONE $1)::date, extract(hour FROM created_at AT TIME ZONE $1)::smallint, count(*),
			count(*) FILTER (WHERE status IN ('sent', 'delivered', 'undelivered')), count(*) FILTER (WHERE status = 'delivered'),
			count(*) FILTER (WHERE status = 'undelivered'), count(*) FILTER (WHERE status = 'failed')
		FROM messaging.messages GROUP BY 1, 2, 3`, analyticsZone); err != nil {
		return fmt.Errorf("seed the hourly rollups: %w", err)
	}
	_, err := pool.Exec(ctx, `INSERT INTO analytics.campaigns (organization_id, id, version, name, status, total_count, created_at, created_day,
			completed_at, sent, delivered, failed)
		SELECT organization_id, source_id::uuid, 1, 'Campaign ' || left(source_id, 8), 'completed', count(*), min(created_at),
			(min(created_at) AT TIME ZONE $2)::date, max(created_at) + interval '1 hour',
			count(*) FILTER (WHERE status IN ('sent', 'delivered', 'undelivered')), count(*) FILTER (WHERE status = 'delivered'),
			count(*) FILTER (WHERE status = 'failed')
		FROM messaging.messages WHERE organization_id = $1 AND source_kind = 'campaign' GROUP BY organization_id, source_id`, orgs[0], analyticsZone)
	if err != nil {
		return fmt.Errorf("seed the campaigns: %w", err)
	}
	return nil
}

// benchIngest writes n events (a campaign's messages: created, sent, delivered) into
// messaging's outbox at once and times analytics until it has applied them all: events per
// second from the first event's commit to the last one's count through the rollups.
func benchIngest(ctx context.Context, ms *msgStack, redisURL, org string, n int) error {
	msgs := max(1, n/3)
	campaign := uuid.NewString()
	o := uuid.MustParse(org)
	at := time.Now().Add(-time.Hour)
	events := make([]outbox.Event, 0, 3*msgs)
	for range msgs {
		id := uuid.NewString()
		for _, s := range []string{"created", "sent", "delivered"} {
			if s == "created" {
				events = append(events, outbox.Event{Type: "message.created", OrgID: o, Payload: &eventsv1.MessageCreated{
					OrganizationId: org, MessageId: id, SourceKind: "campaign", SourceId: campaign, Status: "queued", CreatedAt: timestamppb.New(at)}})
				continue
			}
			events = append(events, outbox.Event{Type: "message.status_changed", OrgID: o, Payload: &eventsv1.MessageStatusChanged{
				OrganizationId: org, MessageId: id, SourceKind: "campaign", SourceId: campaign, Status: s, OccurredAt: timestamppb.New(at)}})
		}
	}
	start := time.Now()
	if err := enqueueMessagingEvents(ctx, ms.pool, events); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	enqueued := time.Since(start)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var delivered int
		if err := ms.pool.QueryRow(ctx, `SELECT coalesce(sum(delivered), 0) FROM analytics.message_hours WHERE organization_id = $1`, org).Scan(&delivered); err != nil {
			return err
		}
		if delivered >= msgs {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ingest: %d of %d messages delivered after 10 minutes", delivered, msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	// The relay's share: when messaging's relay had published the last of them, from the id
	// (milliseconds of its XADD) of the stream's last entry.
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	last, err := rdb.XRevRangeN(ctx, outbox.StreamName("messaging"), "+", "-", 1).Result()
	if err != nil || len(last) == 0 {
		return fmt.Errorf("messaging's stream: %v entries, %w", len(last), err)
	}
	millis, _, _ := strings.Cut(last[0].ID, "-")
	lastAt, err := strconv.ParseInt(millis, 10, 64)
	if err != nil {
		return fmt.Errorf("messaging's stream: entry id %q: %w", last[0].ID, err)
	}
	published := time.UnixMilli(lastAt).Sub(start)
	fmt.Printf("\ningest: %d events (%d messages: created, sent, delivered) written to messaging's outbox in %s, applied in %s: %.0f events/s\n",
		3*msgs, msgs, enqueued.Round(time.Millisecond), took.Round(time.Millisecond), float64(3*msgs)/took.Seconds())
	fmt.Printf("messaging's relay published them in %s (%.0f events/s): analytics applied the last %s after it was published\n",
		published.Round(time.Millisecond), float64(3*msgs)/published.Seconds(), (took - published).Round(time.Millisecond))
	fmt.Println("(messaging makes 3 events a message: at the dispatch bench's quiet 1,133-1,596 messages/s that is 3,400-4,800 events/s)")
	return nil
}

// enqueueMessagingEvents writes events into messaging's outbox in transactions of 1,000, as
// messaging's own writes would, for its relay to publish.
func enqueueMessagingEvents(ctx context.Context, pool *pgxpool.Pool, events []outbox.Event) error {
	for len(events) > 0 {
		batch := events[:min(1000, len(events))]
		events = events[len(batch):]
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL search_path = messaging`); err != nil {
				return err
			}
			return outbox.EnqueueMany(ctx, tx, batch)
		})
		if err != nil {
			return fmt.Errorf("enqueue events: %w", err)
		}
	}
	return nil
}
