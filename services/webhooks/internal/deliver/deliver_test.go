package deliver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/webhooks/internal/egress"
	"github.com/chorus-sms/chorus/services/webhooks/internal/signature"
	"github.com/chorus-sms/chorus/services/webhooks/internal/store"
	"github.com/chorus-sms/chorus/services/webhooks/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The default schedule keeps retrying for at least a day.
func TestDefaultScheduleLastsADay(t *testing.T) {
	var total time.Duration
	for _, d := range DefaultSchedule {
		total += d
	}
	assert.GreaterOrEqual(t, total, 24*time.Hour)
	now := time.Now()
	next, ok := schedule(DefaultSchedule).after(1, now)
	assert.True(t, ok)
	assert.Equal(t, now.Add(5*time.Second), next)
	_, ok = schedule(DefaultSchedule).after(len(DefaultSchedule)+1, now)
	assert.False(t, ok, "the schedule spent")
}

func TestInFlightBoundsEachEndpoint(t *testing.T) {
	f := newInFlight(2)
	a, b := uuid.New(), uuid.New()
	assert.True(t, f.acquire(a))
	assert.True(t, f.acquire(a))
	assert.False(t, f.acquire(a), "a's places are taken")
	assert.True(t, f.acquire(b), "b has its own")
	f.release(a)
	assert.True(t, f.acquire(a))
}

// recorder is an endpoint answering the statuses given in turn (then 200), recording the
// requests' headers and bodies.
type recorder struct {
	mu       sync.Mutex
	statuses []int
	got      []http.Header
	bodies   []string
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	rc.got = append(rc.got, r.Header.Clone())
	rc.bodies = append(rc.bodies, string(body))
	if len(rc.statuses) > 0 {
		w.WriteHeader(rc.statuses[0])
		rc.statuses = rc.statuses[1:]
	}
}

func (rc *recorder) requests() ([]http.Header, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]http.Header(nil), rc.got...), append([]string(nil), rc.bodies...)
}

type fixture struct {
	runner *Runner
	store  *store.Store
	org    uuid.UUID
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, pgtest.NewDatabase(t), "webhooks", pgdb.WithMaxConns(8))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgdb.Migrate(ctx, pool, "webhooks", migrations.FS, migrations.With...))
	cfg.Pool, cfg.Schema, cfg.Store = pool, "webhooks", store.New(pool)
	cfg.Policy = egress.Policy{AllowLoopback: true}
	r, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	return &fixture{runner: r, store: cfg.Store, org: uuid.New()}
}

// deliver registers an endpoint at url and stores one delivery of body to it, queued.
func (f *fixture) deliver(t *testing.T, url, body string) (endpoint store.Endpoint, delivery uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	endpoint = store.Endpoint{OrgID: f.org, ID: uuid.New(), URL: url, Events: []string{"message.received"}, Key: signature.NewKey()}
	require.NoError(t, f.store.CreateEndpoint(ctx, &endpoint))
	delivery = uuid.New()
	require.NoError(t, pgx.BeginFunc(ctx, f.store.Pool(), func(tx pgx.Tx) error {
		ids, err := store.InsertDeliveries(ctx, tx, f.org, "event-1", "message.received", []byte(body), []store.NewDelivery{{ID: delivery, Endpoint: endpoint.ID}})
		if err != nil {
			return err
		}
		return f.runner.Queue(ctx, tx, f.org, ids)
	}))
	return endpoint, delivery
}

func (f *fixture) delivery(t *testing.T, endpoint uuid.UUID) store.Delivery {
	t.Helper()
	ds, err := f.store.ListDeliveries(context.Background(), f.org, endpoint, 10)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	return ds[0]
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("not reached: " + what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A failed attempt is retried by the schedule with the same webhook-id and a valid signature
// each time, and the attempts are recorded with their status codes.
func TestRetriesUntilSuccessWithTheSameID(t *testing.T) {
	f := newFixture(t, Config{Schedule: []time.Duration{time.Millisecond, time.Millisecond}})
	rc := &recorder{statuses: []int{http.StatusBadGateway, http.StatusTooManyRequests}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	ep, id := f.deliver(t, srv.URL, `{"type":"message.received"}`)

	waitFor(t, "succeeded", func() bool { return f.delivery(t, ep.ID).Status == store.StatusSucceeded })
	d := f.delivery(t, ep.ID)
	require.Len(t, d.Attempts, 3)
	for i, want := range []int32{502, 429, 200} {
		assert.Equal(t, want, *d.Attempts[i].StatusCode)
	}
	assert.Nil(t, d.Attempts[2].Error)
	headers, bodies := rc.requests()
	require.Len(t, headers, 3)
	for i, h := range headers {
		assert.Equal(t, id.String(), h.Get("webhook-id"))
		ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
		require.NoError(t, err)
		assert.Equal(t, signature.Sign(ep.Key, id.String(), time.Unix(ts, 0), []byte(bodies[i])), h.Get("webhook-signature"))
		assert.Equal(t, "application/json", h.Get("Content-Type"))
	}
}

// An endpoint failing every attempt for longer than the bound is disabled, saying why; its
// delivery fails once the schedule is spent.
func TestFailingEndpointIsDisabled(t *testing.T) {
	f := newFixture(t, Config{Schedule: []time.Duration{time.Millisecond, time.Millisecond}, DisableAfter: time.Millisecond})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	defer srv.Close()
	ep, _ := f.deliver(t, srv.URL, `{}`)

	waitFor(t, "failed", func() bool { return f.delivery(t, ep.ID).Status == store.StatusFailed })
	got, err := f.store.GetEndpoint(context.Background(), f.org, ep.ID)
	require.NoError(t, err)
	require.NotNil(t, got.DisabledAt)
	assert.Contains(t, *got.DisabledReason, "HTTP 500")
	assert.Contains(t, *got.DisabledReason, "no successful delivery since")
}

// A dead endpoint (nothing listening) fails without a status code, and is retried.
func TestRefusedConnectionIsAFailedAttempt(t *testing.T) {
	f := newFixture(t, Config{Schedule: []time.Duration{time.Millisecond}})
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	ep, _ := f.deliver(t, url, `{}`)

	waitFor(t, "failed", func() bool { return f.delivery(t, ep.ID).Status == store.StatusFailed })
	d := f.delivery(t, ep.ID)
	require.Len(t, d.Attempts, 2)
	assert.Nil(t, d.Attempts[0].StatusCode)
	assert.Equal(t, "connection failed", *d.Attempts[0].Error)
}
