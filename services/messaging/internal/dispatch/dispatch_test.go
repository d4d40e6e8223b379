package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/twilio"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier/carriertest"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
	"github.com/chorus-sms/chorus/services/messaging/migrations"
)

// fixture is a migrated messaging schema of its own and a Redis client; dispatchers built on
// it share the database, as replicas (or a restarted process) do.
type fixture struct {
	t     *testing.T
	pool  *pgxpool.Pool
	store *store.Store
	rdb   *redis.Client
	org   uuid.UUID
	// number is a sending number no other test uses, so throttles do not meet in Redis.
	number string
	// contacts, when set, is the dispatchers' consent checker (nil: system messages only).
	contacts *contacts.Client
}

func TestMain(m *testing.M) {
	pgtest.Main(m, redistest.Close)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, pgtest.NewDatabase(t), "messaging")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgdb.Migrate(ctx, pool, "messaging", migrations.FS, migrations.With...))
	_, rdb := redistest.New(t)
	return &fixture{t: t, pool: pool, store: store.New(pool), rdb: rdb, org: uuid.New(),
		number: fmt.Sprintf("+1999%07d", rand.IntN(10_000_000))}
}

// dispatcher builds a dispatcher on the fixture; live is the carrier of non-sandbox messages.
// Its peers are nil: the messages of these tests are system messages of a sandbox
// organization, which need neither consent nor credits (the e2e tests cover those).
func (f *fixture) dispatcher(live carrier.Provider, rate int, sandboxDelay time.Duration) *Dispatcher {
	f.t.Helper()
	d, err := New(Config{
		Pool: f.pool, Schema: "messaging", Store: f.store, Redis: f.rdb, Live: live, Contacts: f.contacts,
		PublicURL: "http://chorus.test", NumberRate: rate, Workers: 4, SandboxDelay: sandboxDelay,
		SendingTimeout: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(f.t, err)
	return d
}

// queue stores a queued system message to `to` through provider and queues its dispatch on d.
func (f *fixture) queue(d *Dispatcher, provider, to string) uuid.UUID {
	f.t.Helper()
	return f.queueFrom(d, provider, f.number, to)
}

// queueFrom is queue from one of our numbers.
func (f *fixture) queueFrom(d *Dispatcher, provider, from, to string) uuid.UUID {
	f.t.Helper()
	return f.queueMessage(d, &store.Message{
		ID: uuid.Must(uuid.NewV7()), OrgID: f.org, Direction: store.Outgoing, ContactPhone: to, OurNumber: from,
		Body: "You are unsubscribed.", Status: store.StatusQueued, Provider: provider, SourceKind: store.SourceSystem,
		CreatedAt: time.Now(),
	})
}

// queueMessage stores m and queues its dispatch on d (the job is not run unless d is started).
func (f *fixture) queueMessage(d *Dispatcher, m *store.Message) uuid.UUID {
	f.t.Helper()
	ctx := context.Background()
	require.NoError(f.t, f.store.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := f.store.InsertOutgoing(ctx, tx, m); err != nil {
			return err
		}
		return d.QueueTx(ctx, tx, f.org, m.ID)
	}))
	return m.ID
}

// ownRate registers the fixture's number with a rate of its own (chorusctl number add --mps).
func (f *fixture) ownRate(mps int) {
	f.t.Helper()
	ctx := context.Background()
	n, err := f.store.AddNumber(ctx, f.org, f.number, true)
	require.NoError(f.t, err)
	require.NoError(f.t, f.store.SetNumberRate(ctx, f.org, n.ID, mps))
}

func (f *fixture) message(id uuid.UUID) store.Message {
	f.t.Helper()
	m, err := f.store.Message(context.Background(), f.org, id)
	require.NoError(f.t, err)
	return m
}

func (f *fixture) awaitStatus(id uuid.UUID, status string) store.Message {
	f.t.Helper()
	var m store.Message
	require.Eventually(f.t, func() bool { m = f.message(id); return m.Status == status },
		20*time.Second, 50*time.Millisecond, "message %s to be %s", id, status)
	return m
}

func start(t *testing.T, d *Dispatcher) (stop func()) {
	t.Helper()
	require.NoError(t, d.Start(context.Background()))
	var once sync.Once
	stop = func() { once.Do(func() { require.NoError(t, d.Stop(context.Background())) }) }
	t.Cleanup(stop)
	return stop
}

// The sandbox's reports are jobs scheduled when the acceptance is recorded: a process that
// stops before they are due leaves them in the database, and the next process applies them,
// in order.
func TestSandboxReportsSurviveARestart(t *testing.T) {
	f := newFixture(t)
	first := f.dispatcher(nil, 100, 2*time.Second)
	stop := start(t, first)
	id := f.queue(first, carrier.SandboxName, "+12025550007") // sent, then undelivered
	sent := f.awaitStatus(id, store.StatusSent)
	assert.NotEmpty(t, sent.ProviderMessageID)
	stop() // before the first report is due

	var scheduled int
	require.NoError(t, f.pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job
		WHERE kind = $1 AND state = 'scheduled' AND strpos(args->>'reports', $2) > 0`,
		reportArgs{}.Kind(), id.String()).Scan(&scheduled))
	assert.Equal(t, 2, scheduled, "both reports wait in the database")

	start(t, f.dispatcher(nil, 100, 2*time.Second))
	final := f.awaitStatus(id, store.StatusUndelivered)
	assert.Equal(t, sent.ProviderMessageID, final.ProviderMessageID)
}

// A report applied again, or scheduled again, changes nothing: statuses only move forward.
func TestSandboxReportTwiceChangesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.dispatcher(nil, 100, 10*time.Millisecond)
	start(t, d)
	id := f.queue(d, carrier.SandboxName, "+12025550143")
	delivered := f.awaitStatus(id, store.StatusDelivered)
	before := f.statusChanges()

	w := &reportWorker{d: d}
	for _, s := range []string{carrier.StatusSent, carrier.StatusDelivered} {
		job := &river.Job[reportArgs]{Args: reportArgs{Reports: []sandboxReport{{MessageID: id, ProviderMessageID: delivered.ProviderMessageID, Status: s}}}}
		require.NoError(t, w.Work(ctx, job))
	}
	require.NoError(t, f.store.InTx(ctx, func(tx pgx.Tx) error {
		again := []accepted{{m: delivered, provider: carrier.SandboxName, acc: carrier.Accepted{ProviderMessageID: delivered.ProviderMessageID}}}
		_, err := d.river.InsertManyTx(ctx, tx, sandboxReports(again, time.Now(), 0))
		return err
	}))
	time.Sleep(300 * time.Millisecond)
	after := f.message(id)
	assert.Equal(t, store.StatusDelivered, after.Status)
	assert.Equal(t, delivered.StatusAt, after.StatusAt)
	assert.Equal(t, before, f.statusChanges(), "no status change is published again")
}

// One acceptance's reports are one job per step, whatever the batch's size; each message gets
// its own outcome, and one deleted meanwhile does not hold up the others.
func TestSandboxReportsOfABatchAreOneJobAStep(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.dispatcher(nil, 100, 0)
	phones := []string{"+12025550143", "+12025550006", "+12025550007", "+12025550144"}
	var batch []accepted
	for _, p := range phones {
		id := f.queue(d, carrier.SandboxName, p)
		m := f.message(id)
		batch = append(batch, accepted{m: m, provider: carrier.SandboxName, acc: carrier.Accepted{ProviderMessageID: "SB" + p}})
	}
	jobs := sandboxReports(batch, time.Now(), time.Second)
	require.Len(t, jobs, 2, "delivered/failed/sent in step one, undelivered in step two")
	first := jobs[0].Args.(reportArgs).Reports
	assert.Len(t, first, 4)
	assert.Equal(t, packed[sandboxReport]{{MessageID: batch[2].m.ID, ProviderMessageID: "SB+12025550007", Status: carrier.StatusUndelivered}},
		jobs[1].Args.(reportArgs).Reports)

	// The messages are still queued here: the reports move each forward as a carrier's would.
	_, err := f.pool.Exec(ctx, `DELETE FROM messages WHERE id = $1`, batch[3].m.ID)
	require.NoError(t, err)
	w := &reportWorker{d: d}
	for _, j := range jobs {
		require.NoError(t, w.Work(ctx, &river.Job[reportArgs]{Args: j.Args.(reportArgs)}))
	}
	want := []string{store.StatusDelivered, store.StatusFailed, store.StatusUndelivered}
	for i, s := range want {
		assert.Equal(t, s, f.message(batch[i].m.ID).Status, phones[i])
	}
}

// fakeTwilio is an httptest Twilio Messages API; fail makes it answer 503 (nothing taken).
type fakeTwilio struct {
	*httptest.Server
	sends atomic.Int32
	fail  atomic.Bool
	at    []time.Time
	from  map[string][]time.Time // arrivals by sending number
	mu    sync.Mutex
}

func newTwilio(t *testing.T) (*fakeTwilio, carrier.Provider) {
	tw := &fakeTwilio{from: map[string][]time.Time{}}
	var p carrier.Provider
	tw.Server, p = carriertest.Twilio(t, func(w http.ResponseWriter, r *http.Request) {
		if tw.fail.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		tw.sends.Add(1)
		now := time.Now()
		_ = r.ParseForm()
		tw.mu.Lock()
		tw.at = append(tw.at, now)
		tw.from[r.PostForm.Get("From")] = append(tw.from[r.PostForm.Get("From")], now)
		tw.mu.Unlock()
		twilio.Accept(w, "SM"+uuid.NewString()[:8])
	})
	return tw, p
}

// Two workers taking the same queued message (a retried job running beside its first run)
// hand it to the carrier once.
func TestQueuedMessageIsHandedToTheCarrierOnce(t *testing.T) {
	f := newFixture(t)
	tw, live := newTwilio(t)
	d := f.dispatcher(live, 100, 0) // not started: the test is both workers
	id := f.queue(d, "twilio", "+12025550143")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := d.dispatchQueued(context.Background(), f.org, id, attempt{})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, tw.sends.Load())
	m := f.message(id)
	assert.Equal(t, store.StatusSent, m.Status)
	assert.NotNil(t, m.DispatchedAt)
}

// A carrier that does not take the message puts it back in the queue for River's retry; on
// the last attempt the message fails CARRIER_UNAVAILABLE.
func TestUnavailableCarrierRequeuesThenFails(t *testing.T) {
	f := newFixture(t)
	tw, live := newTwilio(t)
	tw.fail.Store(true)
	d := f.dispatcher(live, 100, 0)
	id := f.queue(d, "twilio", "+12025550143")
	_, err := d.dispatchQueued(context.Background(), f.org, id, attempt{})
	require.ErrorIs(t, err, carrier.ErrUnavailable)
	assert.Equal(t, store.StatusQueued, f.message(id).Status, "back in the queue")

	_, err = d.dispatchQueued(context.Background(), f.org, id, attempt{last: true})
	require.NoError(t, err)
	m := f.message(id)
	assert.Equal(t, store.StatusFailed, m.Status)
	assert.Equal(t, CodeCarrierUnavailable, m.ErrorCode)
	assert.Zero(t, tw.sends.Load())
}

// One number sends at most its rate, however many workers dispatch its messages.
func TestNumberIsPacedAtItsRate(t *testing.T) {
	f := newFixture(t)
	tw, live := newTwilio(t)
	d := f.dispatcher(live, 4, 0)
	start(t, d)
	var ids []uuid.UUID
	for i := range 6 {
		ids = append(ids, f.queue(d, "twilio", fmt.Sprintf("+1202555%04d", 100+i)))
	}
	for _, id := range ids {
		f.awaitStatus(id, store.StatusSent)
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	require.Len(t, tw.at, 6)
	at := slices.Clone(tw.at)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	// The guarantee is the rate within any second of the carrier's clock (see throttle.go):
	// of 6 sends at 4/s, the 1st and 5th, the 2nd and 6th reach it at least a second apart.
	for i := 4; i < len(at); i++ {
		assert.GreaterOrEqual(t, at[i].Sub(at[i-4]), time.Second, "sends %d to %d at 4/s within a second", i-4, i)
	}
}

// A number with a rate of its own (chorusctl number add --mps) sends at that rate, beside a
// number at the default: the carrier never sees the slow number send more than its rate in
// a second, nor three of its sends within any second, while the other is not held back.
func TestEachNumberIsPacedAtItsOwnRate(t *testing.T) {
	f := newFixture(t)
	tw, live := newTwilio(t)
	f.ownRate(2)
	d := f.dispatcher(live, 200, 0)
	start(t, d)
	fast := fmt.Sprintf("+1998%07d", rand.IntN(10_000_000))
	var ids []uuid.UUID
	for i := range 5 {
		ids = append(ids, f.queue(d, "twilio", fmt.Sprintf("+1202555%04d", 100+i)))
		ids = append(ids, f.queueFrom(d, "twilio", fast, fmt.Sprintf("+1202555%04d", 200+i)))
	}
	for _, id := range ids {
		f.awaitStatus(id, store.StatusSent)
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	at := tw.from[f.number]
	require.Len(t, at, 5)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	perSecond := map[int64]int{}
	for i, a := range at {
		perSecond[a.Unix()]++
		if i >= 2 {
			assert.GreaterOrEqual(t, a.Sub(at[i-2]), time.Second, "sends %d to %d of a 2/s number within a second", i-2, i)
		}
	}
	for sec, n := range perSecond {
		assert.LessOrEqual(t, n, 2, "second %d", sec)
	}
	fastAt := tw.from[fast]
	require.Len(t, fastAt, 5)
	slices.SortFunc(fastAt, func(a, b time.Time) int { return a.Compare(b) })
	assert.Less(t, fastAt[4].Sub(fastAt[0]), time.Second, "the default-rate number is not held to the slow one's rate")
}

// A reply whose consent cannot be checked when its number lets it go (contacts is down) is not
// handed to the carrier, and is failed as unavailable: the carrier was never asked.
func TestSendNowWithoutAConsentAnswerSendsNothing(t *testing.T) {
	f := newFixture(t)
	var err error
	f.contacts, err = contacts.Dial(servetest.ClosedAddr(t), "messaging")
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.contacts.Close() })
	d := f.dispatcher(nil, 100, time.Second)

	ctx := context.Background()
	m := store.Message{
		ID: uuid.Must(uuid.NewV7()), OrgID: f.org, Direction: store.Outgoing, ContactPhone: "+12025550143", OurNumber: f.number,
		Body: "hello", Status: store.StatusSending, Provider: carrier.SandboxName, SourceKind: store.SourceReply, CreatedAt: time.Now(),
	}
	require.NoError(t, f.store.InTx(ctx, func(tx pgx.Tx) error { _, err := f.store.InsertOutgoing(ctx, tx, &m); return err }))
	out, err := d.SendNow(ctx, m)
	require.NoError(t, err)
	assert.Equal(t, CodeUnavailable, out.ErrorCode)
	got := f.message(m.ID)
	assert.Equal(t, store.StatusFailed, got.Status)
	assert.Equal(t, CodeUnavailable, got.ErrorCode, "not blamed on the carrier")
	assert.Empty(t, got.ProviderMessageID, "the carrier was never asked")
}

// queueOf queues a message of campaign source with its send job (not run).
func (f *fixture) queueOf(d *Dispatcher, source string) uuid.UUID {
	f.t.Helper()
	return f.queueMessage(d, &store.Message{
		ID: uuid.Must(uuid.NewV7()), OrgID: f.org, Direction: store.Outgoing, ContactPhone: "+12025550150", OurNumber: f.number,
		Body: "Hi", Status: store.StatusQueued, Provider: carrier.SandboxName, SourceKind: store.SourceCampaign, SourceID: source,
		CreatedAt: time.Now(),
	})
}

// A cancel withdraws the source's queued messages before it answers, whatever they wait for
// (quiet hours), with their status events: their send jobs then find them settled and do
// nothing. Another source's message stays queued.
func TestCancelWithdrawsQueuedMessagesAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.dispatcher(nil, 100, 0) // not started: the test runs the jobs
	mine, other := f.queueOf(d, "c1"), f.queueOf(d, "c2")
	require.NoError(t, d.SetSourceState(ctx, f.org, store.SourceCampaign, "c1", store.SourceCanceled))

	m := f.message(mine)
	assert.Equal(t, store.StatusFailed, m.Status)
	assert.Equal(t, CodeSourceCanceled, m.ErrorCode)
	assert.Equal(t, store.StatusQueued, f.message(other).Status)
	assert.Equal(t, 1, f.statusChanges(), "one status change published, the withdrawn message's")
	v, err := d.dispatchQueued(ctx, f.org, mine, attempt{})
	require.NoError(t, err)
	assert.Zero(t, v.wait, "its send job does nothing")
	assert.Equal(t, store.StatusFailed, f.message(mine).Status)
	thread, err := f.store.Thread(ctx, f.org, m.ContactPhone, nil, 10)
	require.NoError(t, err)
	assert.Empty(t, thread, "a withdrawn message is not part of the thread")
}

// A paused source's queued message waits longer at each snooze, up to a minute, instead of
// running every 5 s; waking the source makes its snoozed jobs due at once, and only its own.
func TestPausedSourceBacksOffAndWakesAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.dispatcher(nil, 100, 0) // not started: the test runs the jobs
	mine, other := f.queueOf(d, "c1"), f.queueOf(d, "c2")
	for _, src := range []string{"c1", "c2"} {
		require.NoError(t, d.SetSourceState(ctx, f.org, store.SourceCampaign, src, store.SourcePaused))
	}
	var waits []time.Duration
	for snoozes := range 7 {
		v, err := d.dispatchQueued(ctx, f.org, mine, attempt{snoozes: snoozes})
		require.NoError(t, err)
		waits = append(waits, v.wait)
	}
	assert.Equal(t, []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute, time.Minute}, waits)

	// Both jobs snoozed for a while, as River leaves them; resuming c1 wakes only its job.
	_, err := f.pool.Exec(ctx, `UPDATE river_job SET state = 'scheduled', scheduled_at = now() + interval '1 hour'`)
	require.NoError(t, err)
	require.NoError(t, d.SetSourceState(ctx, f.org, store.SourceCampaign, "c1", store.SourceActive))
	require.NoError(t, d.WakeSource(ctx, f.org, store.SourceCampaign, "c1"))
	due := func(id uuid.UUID) bool {
		var ok bool
		require.NoError(t, f.pool.QueryRow(ctx, `SELECT state = 'available' AND scheduled_at <= now() FROM river_job WHERE args->>'message_id' = $1`, id.String()).Scan(&ok))
		return ok
	}
	assert.True(t, due(mine), "the resumed source's job is due now")
	assert.False(t, due(other), "another source's job keeps its wait")
}

// A group's ids travel as one string (one entry of River's index over the arguments), and a
// group queued before they were packed still reads.
func TestPackedListsReadBothWays(t *testing.T) {
	ids := []uuid.UUID{uuid.New(), uuid.New()}
	b, err := json.Marshal(sendGroupArgs{Number: "+12025550100", MessageIDs: ids, Size: 2})
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	assert.IsType(t, "", raw["message_ids"], "one string")

	for _, in := range []string{string(b), `{"number": "+12025550100", "message_ids": ["` + ids[0].String() + `", "` + ids[1].String() + `"]}`} {
		var back sendGroupArgs
		require.NoError(t, json.Unmarshal([]byte(in), &back))
		assert.Equal(t, ids, []uuid.UUID(back.MessageIDs))
	}
}
