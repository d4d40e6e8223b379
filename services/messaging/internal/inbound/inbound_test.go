package inbound_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/twilio"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier/carriertest"
	"github.com/chorus-sms/chorus/services/messaging/internal/dispatch"
	"github.com/chorus-sms/chorus/services/messaging/internal/inbound"
	"github.com/chorus-sms/chorus/services/messaging/internal/msgtest"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

const (
	ourNumber = "+12025550100"
	sender    = "+12025550143"
)

// env is an inbound processor over fakes of orgs and contacts, with a sandbox organization
// that owns ourNumber. Its dispatcher is not started: keyword answers stay queued until start.
type env struct {
	peers *msgtest.Peers
	db    *pgxpool.Pool
	st    *store.Store
	d     *dispatch.Dispatcher
	proc  *inbound.Processor
	org   uuid.UUID
}

func TestMain(m *testing.M) {
	pgtest.Main(m, redistest.Close)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, nil)
}

// newEnvOn is newEnv with live as the carrier; a nil live gives a sandbox organization.
func newEnvOn(t *testing.T, live carrier.Provider) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{peers: msgtest.StartPeers(t)}
	e.db = e.peers.MessagingDB(t)
	e.st = store.New(e.db)
	oc, err := orgs.Dial(e.peers.OrgsAddr, "messaging")
	require.NoError(t, err)
	t.Cleanup(func() { _ = oc.Close() })
	cc, err := contacts.Dial(e.peers.ContactsAddr, "messaging")
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	opts, err := redis.ParseURL(e.peers.RedisURL)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	e.d, err = dispatch.New(dispatch.Config{
		Pool: e.db, Schema: "messaging", Store: e.st, Contacts: cc, Orgs: oc, Redis: rdb, PublicURL: msgtest.PublicURL, Live: live,
		NumberRate: 100, Workers: 2, SandboxDelay: 10 * time.Millisecond, SendingTimeout: time.Hour, Logger: msgtest.Quiet(),
	})
	require.NoError(t, err)
	e.proc = inbound.New(e.st, oc, cc, e.d, rdb, msgtest.Quiet())
	e.org = e.peers.Org(t, "Acme", live == nil)
	_, err = e.st.AddNumber(ctx, e.org, ourNumber, true)
	require.NoError(t, err)
	e.peers.Contact(t, e.org, sender)
	return e
}

// start runs the dispatcher until the test ends.
func (e *env) start(t *testing.T) {
	t.Helper()
	require.NoError(t, e.d.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.d.Stop(ctx)
	})
}

var sids int

func (e *env) text(body string) carrier.Inbound {
	sids++
	return carrier.Inbound{ProviderMessageID: "SM" + strings.Repeat("0", 30) + string(rune('a'+sids/26)) + string(rune('a'+sids%26)), From: sender, To: ourNumber, Body: body}
}

// confirmations counts the keyword answers queued or sent to sender.
func (e *env) confirmations(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.QueryRow(context.Background(), `SELECT count(*) FROM messages
		WHERE organization_id = $1 AND contact_phone = $2 AND source_kind = 'system'`, e.org, sender).Scan(&n))
	return n
}

// A STOP whose consent change reached contacts but whose message was not stored (messaging's
// transaction failed) is delivered again by the carrier: it still ends with exactly one
// confirmation, and a third delivery adds none.
func TestRedeliveredStopIsConfirmedOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	stop := e.text("STOP")
	require.False(t, e.failThenRedeliver(t, stop), "contacts recorded the opt-out before messaging's transaction failed")
	assert.Equal(t, 1, e.confirmations(t), "the redelivery is confirmed")
	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, stop))
	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, e.text("STOP")))
	assert.Equal(t, 1, e.confirmations(t), "neither a duplicate nor a repeated STOP is confirmed again")
}

// failThenRedeliver receives in while storing an incoming message fails, reads whether the
// sender is opted in then, and receives in again once storing works.
func (e *env) failThenRedeliver(t *testing.T, in carrier.Inbound) (optedInMeanwhile bool) {
	t.Helper()
	ctx := context.Background()
	_, err := e.db.Exec(ctx, `CREATE TABLE fail_inbound (x int);
		INSERT INTO fail_inbound VALUES (1);
		CREATE FUNCTION fail_inbound() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.direction = 'incoming' AND EXISTS (SELECT 1 FROM fail_inbound) THEN
				RAISE EXCEPTION 'injected failure';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER fail_inbound BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION fail_inbound();`)
	require.NoError(t, err)
	require.Error(t, e.proc.Receive(ctx, carrier.SandboxName, in))
	optedInMeanwhile, _ = e.peers.Consent(t, e.org, sender)
	_, err = e.db.Exec(ctx, `DELETE FROM fail_inbound`)
	require.NoError(t, err)
	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, in))
	return optedInMeanwhile
}

// An opted-out contact's sign-up whose opt-in reached contacts but whose message was not
// stored (messaging's transaction failed) is confirmed once when the carrier delivers it
// again; a duplicate adds nothing. The confirmation names the brand and the required parts.
func TestRedeliveredSignUpIsConfirmedOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.st.InsertKeyword(ctx, &store.Keyword{
		OrgID: e.org, ID: uuid.New(), Word: "JOIN", Tag: "vip", Confirmation: "Welcome to deals!", Frequency: "Weekly",
	}))
	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, e.text("STOP")))
	join := e.text("Join!")
	require.True(t, e.failThenRedeliver(t, join), "contacts recorded the sign-up before messaging's transaction failed")
	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, join))
	assert.Equal(t, 2, e.confirmations(t), "the STOP's and the sign-up's, once each")

	var body, category string
	require.NoError(t, e.db.QueryRow(ctx, `SELECT o.body, i.category FROM messages o, messages i
		WHERE o.organization_id = $1 AND o.source_kind = 'system' AND i.organization_id = $1 AND i.body = 'Join!'
		ORDER BY o.created_at DESC LIMIT 1`, e.org).Scan(&body, &category))
	assert.Equal(t, "Acme: Welcome to deals! Weekly. Msg & data rates may apply. Reply STOP to opt out, HELP for help.", body)
	assert.Equal(t, "opt_in", category)
}

// STOP then START 40 ms apart, answered by a dispatcher that claims both answers after the
// START arrived: the thread reads STOP, its confirmation, START, its confirmation.
func TestKeywordConfirmationsKeepTheirPlaceInTheThread(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, e.text("STOP")))
	time.Sleep(40 * time.Millisecond)
	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, e.text("START")))
	time.Sleep(20 * time.Millisecond)
	e.start(t)
	var thread []store.Message
	require.Eventually(t, func() bool {
		var err error
		thread, err = e.st.Thread(ctx, e.org, sender, nil, 10)
		require.NoError(t, err)
		return len(thread) == 4
	}, 10*time.Second, 20*time.Millisecond, "both answers are sent")

	var bodies []string
	for i := len(thread) - 1; i >= 0; i-- {
		bodies = append(bodies, thread[i].Body)
	}
	require.Len(t, bodies, 4)
	assert.Equal(t, "STOP", bodies[0])
	assert.Contains(t, bodies[1], "unsubscribed")
	assert.Equal(t, "START", bodies[2])
	assert.Contains(t, bodies[3], "resubscribed")
	optedIn, _ := e.peers.Consent(t, e.org, sender)
	assert.True(t, optedIn)
	for _, m := range thread {
		if m.Direction == store.Outgoing {
			assert.True(t, m.ThreadAt.Before(m.DispatchedAt.Add(time.Nanosecond)), "a claim keeps the answer's place")
		}
	}
}

// heldCarrier is an httptest Twilio Messages API that holds each request until release.
type heldCarrier struct {
	*httptest.Server
	arrived chan string // each message's body, as it arrives
	release chan struct{}
	once    sync.Once
}

// open lets every held request and every later one through.
func (c *heldCarrier) open() { c.once.Do(func() { close(c.release) }) }

func newHeldCarrier(t *testing.T) (*heldCarrier, carrier.Provider) {
	t.Helper()
	c := &heldCarrier{arrived: make(chan string, 10), release: make(chan struct{})}
	var p carrier.Provider
	c.Server, p = carriertest.Twilio(t, func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		c.arrived <- r.PostForm.Get("Body")
		<-c.release
		twilio.Accept(w, "SM"+uuid.NewString()[:8])
	})
	return c, p
}

// A STOP that arrives while a campaign message to its sender is with the carrier (its consent
// check passed before the STOP) is answered only once that hand-off is over, so nothing reaches
// the carrier after the STOP was acknowledged; the next message to the sender is withdrawn.
func TestStopIsAnsweredAfterTheHandOffInFlight(t *testing.T) {
	held, live := newHeldCarrier(t)
	e := newEnvOn(t, live)
	e.start(t)
	t.Cleanup(held.open) // before the dispatcher stops
	ctx := context.Background()
	queue := func(body string) uuid.UUID {
		m := &store.Message{
			ID: uuid.Must(uuid.NewV7()), OrgID: e.org, Direction: store.Outgoing, ContactPhone: sender, OurNumber: ourNumber,
			Body: body, Status: store.StatusQueued, Provider: live.Name(), SourceKind: store.SourceCampaign, SourceID: "c1",
			CreatedAt: time.Now(),
		}
		require.NoError(t, e.st.InTx(ctx, func(tx pgx.Tx) error {
			if _, err := e.st.InsertOutgoing(ctx, tx, m); err != nil {
				return err
			}
			return e.d.QueueTx(ctx, tx, e.org, m.ID)
		}))
		return m.ID
	}
	first := queue("first")
	select {
	case body := <-held.arrived:
		require.Equal(t, "first", body)
	case <-time.After(30 * time.Second):
		t.Fatal("the first message never reached the carrier")
	}

	answered := make(chan error, 1)
	go func() { answered <- e.proc.Receive(ctx, live.Name(), e.text("STOP")) }()
	select {
	case err := <-answered:
		t.Fatalf("the STOP was answered (err %v) while a message to its sender was with the carrier", err)
	case <-time.After(300 * time.Millisecond):
	}
	optedIn, _ := e.peers.Consent(t, e.org, sender)
	require.False(t, optedIn, "the opt-out is recorded before the wait")
	held.open()
	select {
	case err := <-answered:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the STOP was not answered after the hand-off ended")
	}
	got, err := e.st.Message(ctx, e.org, first)
	require.NoError(t, err)
	assert.Equal(t, store.StatusSent, got.Status)

	second := queue("second")
	require.Eventually(t, func() bool {
		m, err := e.st.Message(ctx, e.org, second)
		require.NoError(t, err)
		return m.Status == store.StatusFailed && m.ErrorCode == dispatch.CodeOptedOut
	}, 30*time.Second, 20*time.Millisecond, "the message queued after the STOP is withdrawn")
	for len(held.arrived) > 0 {
		assert.NotEqual(t, "second", <-held.arrived)
	}
}
