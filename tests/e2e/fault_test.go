package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chorus-sms/chorus/pkg/devauth"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/twilio"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/stack"
)

// childEnv marks the test binary re-run as a stack process that the fault tests kill.
const childEnv = "CHORUS_E2E_STACK_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		runChildStack()
		return
	}
	guardDefaultTransport()
	pgtest.Main(m, redistest.Close, failOnStrayViolations)
}

// runChildStack runs the whole stack from the environment until the process is killed.
func runChildStack() {
	r := envconfig.New()
	cfg := stack.ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg.Logger = stackLogger()
	st, err := stack.Start(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("READY")
	_ = st.Wait()
}

// child is a stack process on fixed addresses, so a restarted one is the same service.
type child struct {
	t    *testing.T
	vars []string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

func (c *child) start() {
	t := c.t
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), c.vars...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "READY" {
				ready <- true
			}
		}
		close(ready)
	}()
	select {
	case ok := <-ready:
		require.True(t, ok, "the stack process exited before it was ready")
	case <-time.After(60 * time.Second):
		t.Fatal("the stack process did not start")
	}
	c.mu.Lock()
	c.cmd = cmd
	c.mu.Unlock()
}

// kill ends the process at once (SIGKILL): no deferred work, no graceful shutdown.
func (c *child) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
		c.cmd = nil
	}
}

// A messaging process killed after the carrier accepted a reply and before it recorded the
// acceptance: after a restart the message is not sent again, and the carrier's status
// callback settles its status and credits exactly once.
func TestKilledBetweenCarrierAcceptanceAndCommit(t *testing.T) {
	const authToken = "twilio-test-token"
	var sends atomic.Int32
	var callback atomic.Value
	var proc *child
	carrier := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		sends.Add(1)
		callback.Store(r.PostForm.Get("StatusCallback"))
		proc.kill() // the carrier has the message; its sender dies before hearing so
		twilio.Accept(w, "SMfault00000000000000000000000001")
	}))
	defer carrier.Close()

	redisURL, _ := redistest.New(t)
	dsn := stackDB.NewDatabase(t)
	httpAddr, orgsAddr, billingAddr, messagingAddr := servetest.ClosedAddr(t), servetest.ClosedAddr(t), servetest.ClosedAddr(t), servetest.ClosedAddr(t)
	keyPath := filepath.Join(t.TempDir(), "dev-key.pem")
	proc = &child{t: t, vars: []string{
		childEnv + "=1",
		"CHORUS_DATABASE_URL=" + dsn,
		"CHORUS_REDIS_URL=" + redisURL,
		"CHORUS_HTTP_ADDR=" + httpAddr,
		"CHORUS_ORGS_ADDR=" + orgsAddr,
		"CHORUS_CONTACTS_ADDR=" + servetest.ClosedAddr(t),
		"CHORUS_BILLING_ADDR=" + billingAddr,
		"CHORUS_MESSAGING_ADDR=" + messagingAddr,
		"CHORUS_DEV_JWKS_ADDR=" + servetest.ClosedAddr(t),
		"CHORUS_DEV_KEY=" + keyPath,
		"CHORUS_SMS_PROVIDER=twilio",
		"CHORUS_CURSOR_SECRET=e2e-cursor-secret",
		"CHORUS_SANDBOX_AUTH_TOKEN=e2e-sandbox-token",
		"CHORUS_TWILIO_ACCOUNT_SID=ACtest",
		"CHORUS_TWILIO_AUTH_TOKEN=" + authToken,
		"CHORUS_TWILIO_API_URL=" + carrier.URL,
	}}
	proc.start()
	t.Cleanup(proc.kill)

	dial := func(addr string) *grpc.ClientConn {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	ctx := context.Background()
	orgs := orgsv1.NewOrgsServiceClient(dial(orgsAddr))
	o, err := orgs.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "Fault Co"})
	require.NoError(t, err)
	org := o.GetOrganization().GetId()
	_, err = orgs.SetMembership(ctx, &orgsv1.SetMembershipRequest{OrganizationId: org, UserSubject: "ops", Access: orgsv1.Access_ACCESS_WRITE})
	require.NoError(t, err)
	_, err = billingv1.NewBillingServiceClient(dial(billingAddr)).GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: org, Amount: 5, IdempotencyKey: "seed"})
	require.NoError(t, err)
	_, err = messagingv1.NewMessagingServiceClient(dial(messagingAddr)).AddNumber(ctx, &messagingv1.AddNumberRequest{OrganizationId: org, Number: "+12025550100"})
	require.NoError(t, err)
	key, err := devauth.LoadOrCreate(keyPath)
	require.NoError(t, err)
	tok, err := key.Sign("ops", time.Hour)
	require.NoError(t, err)
	registerGateway(t, "http://"+httpAddr)
	e := &env{t: t, st: &stack.Stack{HTTPURL: "http://" + httpAddr}, http: &http.Client{Timeout: 30 * time.Second, Transport: testTransport(t)}}
	tn := &tenant{client: &client{e: e, token: tok, org: org}}
	tn.contact("+12025550143", "Ada", true)

	req, err := http.NewRequest("POST", e.st.HTTPURL+"/api/conversations/%2B12025550143/reply", strings.NewReader(`{"message": "sent once"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("x-organization-id", org)
	req.Header.Set("Content-Type", "application/json")
	if res, err := e.http.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the reply answered %d although its process was killed", res.StatusCode)
	}
	require.EqualValues(t, 1, sends.Load())

	proc.start()
	assert.Equal(t, "sent", tn.thread("+12025550143")[0]["status"], "the acceptance was never recorded: the carrier was handed the message")
	assert.Equal(t, 4.0, tn.balance(), "the reply's credit stays held (not spendable, not yet consumed) until the outcome is known")

	// The carrier reports delivery to the callback URL it was given, which names our message.
	cb := callback.Load().(string)
	u, err := url.Parse(cb)
	require.NoError(t, err)
	form := url.Values{"MessageSid": {"SMfault00000000000000000000000001"}, "MessageStatus": {"delivered"}, "AccountSid": {"ACtest"}, "To": {"+12025550143"}, "From": {"+12025550100"}}
	for range 2 { // and, as carriers do, once more
		res := (&msgEnv{env: e}).webhook(u.RequestURI(), authToken, "", form)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	}
	msgs := tn.thread("+12025550143")
	require.Len(t, msgs, 1)
	assert.Equal(t, "delivered", msgs[0]["status"])
	assert.Equal(t, 4.0, tn.balance(), "the held credit consumed, once: not returned, not charged twice")
	db, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer db.Close(ctx)
	var debits, debited, held int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'debit'), coalesce(sum(amount) FILTER (WHERE kind = 'debit'), 0),
		coalesce(sum(held_delta), 0) FROM billing.ledger WHERE organization_id = $1`, org).Scan(&debits, &debited, &held))
	assert.Equal(t, []int{1, 1, 0}, []int{debits, debited, held}, "one debit of one credit, nothing left held")
	time.Sleep(2 * time.Second)
	assert.EqualValues(t, 1, sends.Load(), "the restarted process did not send the message again")
}
