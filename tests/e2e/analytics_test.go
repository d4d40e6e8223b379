package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/pgdb"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
)

// producers writes events into messaging's and campaigns' outboxes as those services do, at
// times a test chooses; their relays publish them and analytics consumes them as any others.
type producers struct {
	t                    *testing.T
	messaging, campaigns *pgxpool.Pool
}

func newProducers(e *env) *producers {
	t := e.t
	t.Helper()
	open := func(schema string) *pgxpool.Pool {
		pool, err := pgdb.Open(context.Background(), e.dsn, schema)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		return pool
	}
	return &producers{t: t, messaging: open("messaging"), campaigns: open("campaigns")}
}

func (p *producers) enqueue(pool *pgxpool.Pool, typ, org string, payload proto.Message) {
	p.t.Helper()
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		return outbox.Enqueue(context.Background(), tx, outbox.Event{Type: typ, OrgID: uuid.MustParse(org), Payload: payload})
	})
	require.NoError(p.t, err)
}

// at is an RFC 3339 time of the script.
func at(s string) *timestamppb.Timestamp {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return timestamppb.New(t)
}

// msg is one outgoing message of the script: created, then each status at its time.
type msg struct {
	kind, source, created string
	statuses              [][2]string // status, time
	errorCode             string      // of a failed status
}

func (p *producers) message(org string, m msg) {
	id := uuid.NewString()
	p.enqueue(p.messaging, "message.created", org, &eventsv1.MessageCreated{
		OrganizationId: org, MessageId: id, To: "+13125550100", SourceKind: m.kind, SourceId: m.source, Status: "queued", CreatedAt: at(m.created),
	})
	for _, s := range m.statuses {
		ev := &eventsv1.MessageStatusChanged{OrganizationId: org, MessageId: id, To: "+13125550100", Status: s[0],
			SourceKind: m.kind, SourceId: m.source, OccurredAt: at(s[1])}
		if s[0] == "failed" {
			ev.ErrorCode = m.errorCode
		}
		p.enqueue(p.messaging, "message.status_changed", org, ev)
	}
}

func (p *producers) campaign(org, id, name, status, created string, version int64, total int32) {
	ev := &eventsv1.CampaignChanged{OrganizationId: org, CampaignId: id, Name: name, Status: status, TotalCount: total,
		CreatedAt: at(created), Version: version}
	if status == "completed" {
		ev.CompletedAt = timestamppb.New(ev.GetCreatedAt().AsTime().Add(2 * time.Hour))
	}
	p.enqueue(p.campaigns, "campaign.changed", org, ev)
}

// analytics reads GET /api/analytics/<path>, failing on anything but 200.
func (tn *tenant) analytics(path string) response {
	t := tn.e.t
	t.Helper()
	res := tn.do("GET", "/api/analytics/"+path, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s: %s", path, res.Body)
	return res
}

// list decodes a bare JSON array.
func list(t *testing.T, r response) []map[string]any {
	t.Helper()
	var out []map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &out), "%s", r.Body)
	return out
}

const (
	iPhoneUA   = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1"
	iMessageUA = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0"
)

// scriptRange is the week of the scripted history, as local dates of America/Chicago (UTC-6
// then): Monday 2 to Sunday 8 February 2026.
const scriptRange = "startDate=2026-02-02&endDate=2026-02-08"

// playScript writes a known week of one organization (in America/Chicago) into the producers'
// outboxes: campaigns with every outcome across days and hours (late, repeated and reordered
// reports among them), test sends and a keyword confirmation (never counted), a message that
// waited in the queue overnight, replies, inbound texts, clicks by people and by preview bots,
// events out of the range and another organization's.
func playScript(p *producers, org, other string) {
	a, b, c, d, e, f := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	// A, Monday 09:00 local: 2 delivered (one report out of order), 1 failed after sent, 1 withdrawn.
	p.campaign(org, a, "Spring", "completed", "2026-02-02T15:00:00Z", 5, 4)
	p.message(org, msg{kind: "campaign", source: a, created: "2026-02-02T15:00:00Z", statuses: [][2]string{{"sent", "2026-02-02T15:01:00Z"}, {"delivered", "2026-02-02T15:02:00Z"}}})
	p.message(org, msg{kind: "campaign", source: a, created: "2026-02-02T15:00:00Z", statuses: [][2]string{{"delivered", "2026-02-02T15:03:00Z"}, {"sent", "2026-02-02T15:01:30Z"}}})
	p.message(org, msg{kind: "campaign", source: a, created: "2026-02-02T15:00:00Z", statuses: [][2]string{{"sent", "2026-02-02T15:01:00Z"}, {"failed", "2026-02-02T15:04:00Z"}}, errorCode: "30003"})
	p.message(org, msg{kind: "campaign", source: a, created: "2026-02-02T15:00:00Z", statuses: [][2]string{{"failed", "2026-02-02T15:05:00Z"}}, errorCode: "SOURCE_CANCELED"})
	// Its test copies and a STOP's confirmation: not the organization's messaging.
	p.message(org, msg{kind: "test", source: a, created: "2026-02-02T14:00:00Z", statuses: [][2]string{{"sent", "2026-02-02T14:00:01Z"}, {"delivered", "2026-02-02T14:00:02Z"}}})
	p.message(org, msg{kind: "test", source: a, created: "2026-02-02T14:00:00Z", statuses: [][2]string{{"sent", "2026-02-02T14:00:01Z"}}})
	p.message(org, msg{kind: "system", created: "2026-02-07T17:05:01Z", statuses: [][2]string{{"sent", "2026-02-07T17:05:02Z"}, {"delivered", "2026-02-07T17:05:03Z"}}})
	// B, created Wednesday 02:30 UTC = Tuesday 20:30 local, sent at 21:10 local: delivered,
	// undelivered, delivered with a late "sent" repeated after it.
	p.campaign(org, b, "Summer, \"early\"", "completed", "2026-02-04T02:30:00Z", 3, 3)
	p.message(org, msg{kind: "campaign", source: b, created: "2026-02-04T02:30:00Z", statuses: [][2]string{{"sent", "2026-02-04T03:10:00Z"}, {"delivered", "2026-02-04T03:11:00Z"}}})
	p.message(org, msg{kind: "campaign", source: b, created: "2026-02-04T02:30:00Z", statuses: [][2]string{{"sent", "2026-02-04T03:10:00Z"}, {"undelivered", "2026-02-04T03:12:00Z"}}})
	p.message(org, msg{kind: "campaign", source: b, created: "2026-02-04T02:30:00Z", statuses: [][2]string{{"sent", "2026-02-04T03:10:00Z"}, {"delivered", "2026-02-04T03:11:00Z"}, {"sent", "2026-02-04T03:10:00Z"}}})
	// C a draft and D failed (a name a spreadsheet would run) on Thursday; F scheduled,
	// created Sunday 04:00 UTC = Saturday 22:00 local.
	p.campaign(org, c, "Autumn draft", "draft", "2026-02-05T16:00:00Z", 0, 0)
	p.campaign(org, d, "=SUM(A1:A9)", "failed", "2026-02-05T17:00:00Z", 1, 0)
	p.campaign(org, f, "Winter", "scheduled", "2026-02-08T04:00:00Z", 0, 0)
	// E sending, its snapshots out of order: the later version stands. One message still queued
	// (Friday 08:05 local), one queued Friday 23:00 local and sent Saturday 08:00 local.
	p.campaign(org, e, "Going", "sending", "2026-02-06T14:00:00Z", 3, 2)
	p.campaign(org, e, "Going", "pending", "2026-02-06T14:00:00Z", 1, 0)
	p.message(org, msg{kind: "campaign", source: e, created: "2026-02-06T14:05:00Z"})
	p.message(org, msg{kind: "campaign", source: e, created: "2026-02-07T05:00:00Z", statuses: [][2]string{{"sent", "2026-02-07T14:00:00Z"}, {"delivered", "2026-02-07T14:01:00Z"}}})
	// A reply and a poll question Saturday noon local, delivered.
	p.message(org, msg{kind: "reply", created: "2026-02-07T18:00:00Z", statuses: [][2]string{{"sent", "2026-02-07T18:00:01Z"}, {"delivered", "2026-02-07T18:00:05Z"}}})
	p.message(org, msg{kind: "poll", source: uuid.NewString(), created: "2026-02-07T18:30:00Z", statuses: [][2]string{{"sent", "2026-02-07T18:30:01Z"}, {"delivered", "2026-02-07T18:30:05Z"}}})
	// Three texts in, Saturday 11:00 local.
	for _, s := range []string{"2026-02-07T17:00:00Z", "2026-02-07T17:01:00Z", "2026-02-07T17:05:00Z"} {
		p.enqueue(p.messaging, "message.received", org, &eventsv1.MessageReceived{OrganizationId: org, MessageId: uuid.NewString(), ReceivedAt: at(s)})
	}
	// Saturday's clicks: two people, three preview fetchers.
	for _, ua := range []string{iPhoneUA, iPhoneUA, iMessageUA, "WhatsApp/2.23.20.0 A", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"} {
		p.enqueue(p.messaging, "link.clicked", org, &eventsv1.LinkClicked{OrganizationId: org, Code: "abcdefgh", SourceKind: "campaign", SourceId: a,
			ClickedAt: at("2026-02-07T19:00:00Z"), UserAgent: ua})
	}
	// Out of the range (Monday 9 February local), and another organization's week.
	p.message(org, msg{kind: "reply", created: "2026-02-09T15:00:00Z", statuses: [][2]string{{"sent", "2026-02-09T15:00:01Z"}, {"delivered", "2026-02-09T15:00:05Z"}}})
	p.campaign(org, uuid.NewString(), "Later", "completed", "2026-02-09T15:00:00Z", 5, 1)
	p.campaign(other, uuid.NewString(), "Theirs", "completed", "2026-02-03T15:00:00Z", 5, 1)
	p.message(other, msg{kind: "reply", created: "2026-02-03T15:00:00Z", statuses: [][2]string{{"sent", "2026-02-03T15:00:01Z"}, {"delivered", "2026-02-03T15:00:05Z"}}})
}

// checkScript checks every endpoint against the scripted week, number by number.
func checkScript(t *testing.T, tn *tenant) {
	t.Helper()
	ov := tn.analytics("overview?" + scriptRange).JSON(t)
	assert.Equal(t, map[string]any{"start": "2026-02-02", "end": "2026-02-08"}, ov["dateRange"])
	// A, B, C, D, E, F: Later is out of the range.
	assert.Equal(t, map[string]any{"total": 6.0, "completed": 2.0, "sending": 1.0, "scheduled": 1.0, "failed": 1.0}, ov["campaigns"])
	// A's 3 (the withdrawn one nowhere), B's 3, E's 2, the reply, the poll question; no test
	// copy, no confirmation.
	assert.Equal(t, map[string]any{"total": 10.0, "sent": 8.0, "delivered": 7.0, "failed": 1.0, "received": 3.0}, ov["messages"])
	assert.Equal(t, 70.0, ov["deliveryRate"], "7 delivered of 10")
	assert.Equal(t, map[string]any{"human": 2.0, "previews": 3.0}, ov["clicks"])

	days := list(t, tn.analytics("trends?"+scriptRange))
	want := []string{
		`{"date":"2026-02-02","delivered":2,"failed":1,"sent":2,"total":3}`,
		`{"date":"2026-02-03","delivered":2,"failed":0,"sent":3,"total":3}`,
		`{"date":"2026-02-04","delivered":0,"failed":0,"sent":0,"total":0}`,
		`{"date":"2026-02-05","delivered":0,"failed":0,"sent":0,"total":0}`,
		`{"date":"2026-02-06","delivered":0,"failed":0,"sent":0,"total":1}`,
		`{"date":"2026-02-07","delivered":3,"failed":0,"sent":3,"total":3}`,
		`{"date":"2026-02-08","delivered":0,"failed":0,"sent":0,"total":0}`,
	}
	assert.Equal(t, want, canonical(t, days))
	days = list(t, tn.analytics("trends?metric=campaigns&"+scriptRange))
	want = []string{
		`{"completed":1,"date":"2026-02-02","failed":0,"sending":0,"total":1}`,
		`{"completed":1,"date":"2026-02-03","failed":0,"sending":0,"total":1}`,
		`{"completed":0,"date":"2026-02-04","failed":0,"sending":0,"total":0}`,
		`{"completed":0,"date":"2026-02-05","failed":1,"sending":0,"total":2}`,
		`{"completed":0,"date":"2026-02-06","failed":0,"sending":1,"total":1}`,
		`{"completed":0,"date":"2026-02-07","failed":0,"sending":0,"total":1}`,
		`{"completed":0,"date":"2026-02-08","failed":0,"sending":0,"total":0}`,
	}
	assert.Equal(t, want, canonical(t, days))

	top := list(t, tn.analytics("top-campaigns?"+scriptRange))
	require.Len(t, top, 2, "completed campaigns of the range only")
	assert.Equal(t, "Spring", top[0]["name"])
	assert.Equal(t, []any{4.0, 2.0, 2.0, 1.0, 100.0}, []any{top[0]["totalCount"], top[0]["sentCount"], top[0]["deliveredCount"], top[0]["failedCount"], top[0]["deliveryRate"]})
	assert.Equal(t, "2026-02-02T15:00:00Z", top[0]["createdAt"])
	assert.Equal(t, `Summer, "early"`, top[1]["name"])
	assert.Equal(t, []any{3.0, 3.0, 2.0, 0.0}, []any{top[1]["totalCount"], top[1]["sentCount"], top[1]["deliveredCount"], top[1]["failedCount"]})
	assert.InDelta(t, 66.667, top[1]["deliveryRate"], 0.001)
	assert.Len(t, list(t, tn.analytics("top-campaigns?limit=1&"+scriptRange)), 1)

	best := tn.analytics("best-send-times?" + scriptRange).JSON(t)
	hours, dows := best["byHour"].([]any), best["byDayOfWeek"].([]any)
	require.Len(t, hours, 24)
	require.Len(t, dows, 7)
	wantHours := map[int][2]float64{8: {1, 1}, 9: {2, 2}, 12: {2, 2}, 21: {3, 2}}
	for h, v := range hours {
		b := v.(map[string]any)
		assert.Equal(t, float64(h), b["hour"])
		w := wantHours[h]
		assert.Equal(t, w[0], b["totalSent"], "hour %d", h)
		assert.Equal(t, w[1], b["delivered"], "hour %d", h)
	}
	assert.InDelta(t, 66.667, hours[21].(map[string]any)["deliveryRate"], 0.001)
	assert.Equal(t, 0.0, hours[3].(map[string]any)["deliveryRate"], "nothing sent: 0")
	wantDays := map[int][2]float64{1: {2, 2}, 2: {3, 2}, 6: {3, 3}} // Monday, Tuesday, Saturday
	for d, v := range dows {
		b := v.(map[string]any)
		assert.Equal(t, float64(d), b["dayOfWeek"])
		assert.Equal(t, wantDays[d][0], b["totalSent"], "day %d", d)
		assert.Equal(t, wantDays[d][1], b["delivered"], "day %d", d)
	}

	res := tn.do("GET", "/api/analytics/export?type=campaigns&"+scriptRange, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, "text/csv; charset=utf-8", res.Header.Get("Content-Type"))
	assert.Equal(t, `attachment; filename=campaigns-2026-02-02-to-2026-02-08.csv`, res.Header.Get("Content-Disposition"))
	rows, err := csv.NewReader(strings.NewReader(string(res.Body))).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, [][]string{
		{"Campaign Name", "Status", "Total Recipients", "Sent", "Delivered", "Failed", "Created At", "Completed At"},
		{"Winter", "scheduled", "0", "0", "0", "0", "2026-02-08T04:00:00Z", ""},
		{"Going", "sending", "2", "1", "1", "0", "2026-02-06T14:00:00Z", ""},
		{"'=SUM(A1:A9)", "failed", "0", "0", "0", "0", "2026-02-05T17:00:00Z", ""},
		{"Autumn draft", "draft", "0", "0", "0", "0", "2026-02-05T16:00:00Z", ""},
		{`Summer, "early"`, "completed", "3", "3", "2", "0", "2026-02-04T02:30:00Z", "2026-02-04T04:30:00Z"},
		{"Spring", "completed", "4", "2", "2", "1", "2026-02-02T15:00:00Z", "2026-02-02T17:00:00Z"},
	}, rows)
}

// canonical renders each item as sorted-key JSON, so a day compares as one string.
func canonical(t *testing.T, items []map[string]any) []string {
	t.Helper()
	out := make([]string, len(items))
	for i, it := range items {
		b, err := json.Marshal(it)
		require.NoError(t, err)
		out[i] = string(b)
	}
	return out
}

// awaitScript waits until the scripted week is all in (its last events counted).
func awaitScript(t *testing.T, tn *tenant) {
	t.Helper()
	eventually(t, 30*time.Second, "the scripted week in the rollups", func() bool {
		ov := tn.analytics("overview?" + scriptRange).JSON(t)
		m, _ := ov["messages"].(map[string]any)
		c, _ := ov["clicks"].(map[string]any)
		k, _ := ov["campaigns"].(map[string]any)
		return m["total"] == 10.0 && m["delivered"] == 7.0 && m["received"] == 3.0 && c["previews"] == 3.0 && k["total"] == 6.0
	})
}

// A scripted week checked number by number against every analytics endpoint; then analytics'
// rollups and consumer groups are dropped and every event replayed from the streams: the same
// numbers. Another organization sees none of it.
func TestAnalyticsScriptedHistoryAndReplay(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550180", 0)
	other := e.newTenant("+13125550181", 0)
	p := newProducers(e.env)

	// Contacts are counted now, by contacts: a mobile, a landline, and a mobile that opts out.
	tn.contact("+13125550101", "Ann", true)
	tn.contact("+13125550002", "Land", true)
	tn.contact("+13125550103", "Stop", true)
	require.Equal(t, http.StatusOK, e.inbound(tn.number, "+13125550103", "STOP").Status)

	playScript(p, tn.org, other.org)
	awaitScript(t, tn)
	checkScript(t, tn)
	ov := tn.analytics("overview?" + scriptRange).JSON(t)
	assert.Equal(t, map[string]any{"total": 3.0, "textable": 2.0, "optedOut": 1.0}, ov["contacts"])

	theirs := other.analytics("overview?" + scriptRange).JSON(t)
	assert.Equal(t, map[string]any{"total": 1.0, "sent": 1.0, "delivered": 1.0, "failed": 0.0, "received": 0.0}, theirs["messages"])
	assert.Equal(t, 1.0, theirs["campaigns"].(map[string]any)["total"])
	assert.Empty(t, list(t, other.analytics("top-campaigns?limit=100&startDate=2026-02-02&endDate=2026-02-02")), "Spring is not theirs")

	// Replay from scratch: the rollups and the record of processed events emptied, the consumer
	// groups deleted; the consumers make them again at the start of the streams.
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, e.dsn, "analytics")
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, `TRUNCATE messages, message_hours, pending_counts, campaigns, click_days, processed_events`)
	require.NoError(t, err)
	// Nothing is applied between the truncation and the groups' deletion: no event is new.
	assert.Equal(t, 0.0, tn.analytics("overview?" + scriptRange).JSON(t)["messages"].(map[string]any)["total"], "emptied")
	opts, err := redis.ParseURL(e.redisURL)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	for _, stream := range []string{outbox.StreamName("messaging"), outbox.StreamName("campaigns")} {
		require.NoError(t, rdb.XGroupDestroy(ctx, stream, "analytics").Err())
	}
	awaitScript(t, tn)
	checkScript(t, tn)
}

// Bad ranges and parameters answer 400 naming the field; nothing is a 500.
func TestAnalyticsRefusesBadParameters(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("", 0)
	for _, c := range []struct{ path, field string }{
		{"overview?startDate=2026-03-02&endDate=2026-03-01", "endDate"},
		{"overview?startDate=2025-01-01&endDate=2026-01-02", "startDate"},
		{"overview?startDate=yesterday", "startDate"},
		{"trends?metric=contacts", "metric"},
		{"trends?endDate=2026-02-30", "endDate"},
		{"top-campaigns?limit=0", "limit"},
		{"top-campaigns?limit=101", "limit"},
		{"top-campaigns?limit=ten", "limit"},
		{"best-send-times?startDate=2020-01-01", "startDate"},
		{"export?type=contacts", "type"},
		{"export", "type"},
		{"export?type=campaigns&startDate=2026-03-02&endDate=2026-03-01", "endDate"},
	} {
		res := tn.do("GET", "/api/analytics/"+c.path, nil)
		assert.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", c.path, res.Body)
		assert.Equal(t, "VALIDATION_FAILED", res.ErrCode(t), c.path)
		assert.Contains(t, res.ErrFields(t), c.field, c.path)
	}
	res := tn.do("GET", "/api/analytics/overview?startDate=2025-01-01&endDate=2026-01-01", nil)
	assert.Equal(t, http.StatusOK, res.Status, "366 days: %s", res.Body)
	res = tn.do("POST", "/api/analytics/overview", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, res.Status, "%s", res.Body)
	anon := &client{e: e.env, org: tn.org}
	assert.Equal(t, http.StatusUnauthorized, anon.do("GET", "/api/analytics/export?type=campaigns", nil).Status)
}

// What the real producers send reaches the dashboards within 5 seconds: a campaign through the
// sandbox carrier (delivered, failed and undelivered numbers), a test copy and a STOP's
// confirmation (not counted), a person's click and a preview fetch of its short link, an
// inbound text, whose arrival is timed through the REST endpoint.
func TestAnalyticsFollowsTheProducersWithinFiveSeconds(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550190", 100)
	tn.contacts("analytics", []string{"+13125550111", "+13125550112", "+13125550006", "+13125550007"})
	c := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Live", "message": "Hi {{firstName}}: https://example.com/offer", "timezone": zoneWhere(12),
		"contactFilter": map[string]any{"tags": []string{"analytics"}},
	}), http.StatusCreated)
	id := c.str("id")
	res := tn.do("POST", "/api/campaigns/"+id+"/test-send", map[string]any{"recipients": []string{"+13125550199"}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	done := tn.awaitStatus(id, "completed", 60*time.Second)
	eventually(t, 30*time.Second, "delivery reports", func() bool {
		d := tn.getCampaign(id)["displayMetrics"].(map[string]any)
		return d["delivered"] == 2.0 && d["failed"] == 1.0
	})

	// Follow the campaign's link as a person and as iMessage's preview.
	texts := tn.campaignTexts("+13125550111", "Hi")
	require.NotEmpty(t, texts)
	link := texts[0][strings.Index(texts[0], "http"):]
	for _, ua := range []string{iPhoneUA, iMessageUA} {
		req, err := http.NewRequest("GET", link, nil)
		require.NoError(t, err)
		req.Header.Set("User-Agent", ua)
		r, err := e.noFollow().Do(req)
		require.NoError(t, err)
		r.Body.Close()
		require.Equal(t, http.StatusFound, r.StatusCode)
	}
	require.Equal(t, http.StatusOK, e.inbound(tn.number, "+13125550112", "STOP").Status)

	eventually(t, 10*time.Second, "the campaign in the overview", func() bool {
		ov := tn.analytics("overview").JSON(t)
		m := ov["messages"].(map[string]any)
		return m["delivered"] == 2.0 && m["failed"] == 1.0 && m["received"] == 1.0 && ov["clicks"].(map[string]any)["human"] == 1.0 &&
			ov["clicks"].(map[string]any)["previews"] == 1.0 && ov["contacts"].(map[string]any)["optedOut"] == 1.0
	})
	ov := tn.analytics("overview").JSON(t)
	// Four campaign messages (0006 failed, 0007 undelivered); the test copy and the STOP's
	// confirmation are not counted.
	assert.Equal(t, map[string]any{"total": 4.0, "sent": 3.0, "delivered": 2.0, "failed": 1.0, "received": 1.0}, ov["messages"])
	assert.Equal(t, 50.0, ov["deliveryRate"])
	assert.Equal(t, map[string]any{"human": 1.0, "previews": 1.0}, ov["clicks"])
	assert.Equal(t, map[string]any{"total": 4.0, "textable": 4.0, "optedOut": 1.0}, ov["contacts"])
	assert.Equal(t, 1.0, ov["campaigns"].(map[string]any)["completed"])
	top := list(t, tn.analytics("top-campaigns"))
	require.Len(t, top, 1)
	assert.Equal(t, []any{id, 4.0, 3.0, 2.0, 1.0}, []any{top[0]["id"], top[0]["totalCount"], top[0]["sentCount"], top[0]["deliveredCount"], top[0]["failedCount"]})
	assert.InDelta(t, 66.667, top[0]["deliveryRate"], 0.001, "the campaign's own rate: delivered of sent")
	assert.Equal(t, done.str("createdAt"), top[0]["createdAt"])

	// Freshness: an inbound text, from its webhook's answer to its count through the gateway.
	before := ov["messages"].(map[string]any)["received"].(float64)
	start := time.Now()
	require.Equal(t, http.StatusOK, e.inbound(tn.number, "+13125550111", "thanks!").Status)
	eventually(t, 5*time.Second, "the inbound text counted within 5 s", func() bool {
		return tn.analytics("overview").JSON(t)["messages"].(map[string]any)["received"] == before+1
	})
	t.Logf("freshness: inbound text visible through /api/analytics/overview %s after its webhook answered", time.Since(start).Round(time.Millisecond))
}
