package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/servetest"
	caller "github.com/chorus-sms/chorus/pkg/tenant"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging"
	"github.com/chorus-sms/chorus/stack"
)

// errorBody is the one REST error body, decoded strictly enough to compare whole.
type errorBody struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields"`
}

// assertError checks the status and the exact error a REST client sees, and that nothing of
// a peer's status, the wrap chain or an address travelled with it.
func assertError(t *testing.T, res response, status int, want errorBody) {
	t.Helper()
	require.Equal(t, status, res.Status, "%s", res.Body)
	var body struct {
		Error struct {
			errorBody
			RequestID string `json:"requestId"`
		} `json:"error"`
	}
	require.NoError(t, jsonUnmarshal(res.Body, &body), "%s", res.Body)
	assert.Equal(t, want, body.Error.errorBody)
	assert.NotEmpty(t, body.Error.RequestID)
	for _, leak := range []string{"rpc error", "desc =", "127.0.0.1", "dial tcp", ": place hold", "check sendable", "search contacts", "billing", "contacts"} {
		assert.NotContains(t, string(res.Body), leak)
	}
}

// Errors that start in a peer (contacts, billing, orgs) and pass through messaging reach the
// REST client in messaging's own words, or masked; never with the peer's text.
func TestPeerErrorsCrossMessagingInItsOwnWords(t *testing.T) {
	jwksAddr := servetest.ClosedAddr(t)
	e := newMsgEnv(t, map[string]string{"CHORUS_DEV_JWKS_ADDR": jwksAddr})
	tn := e.newTenant("+12025550100", 0)
	tn.contact("+12025550143", "Ada", true)
	reply := func(c *client) response {
		return c.do("POST", "/api/conversations/%2B12025550143/reply", map[string]any{"message": "hello"})
	}

	t.Run("validation in contacts", func(t *testing.T) {
		res := tn.do("GET", "/api/conversations?search=a+b+c+d+e+f+g+h+i", nil)
		assertError(t, res, http.StatusBadRequest, errorBody{
			Code: "VALIDATION_FAILED", Message: "invalid search: is too long to match names: at most 200 characters and 8 words",
			Fields: map[string]string{"search": "is too long to match names: at most 200 characters and 8 words"},
		})
	})
	t.Run("not found in contacts", func(t *testing.T) {
		res := tn.do("POST", "/api/conversations/%2B12025550199/reply", map[string]any{"message": "hello"})
		assertError(t, res, http.StatusBadRequest, errorBody{Code: "CONTACT_NOT_FOUND", Message: "no contact has this phone number; create the contact first"})
	})
	t.Run("not found in orgs", func(t *testing.T) {
		// AddNumber is the operator's gRPC call: the same boundary, one hop shorter.
		_, err := e.messaging.AddNumber(context.Background(), &messagingv1.AddNumberRequest{OrganizationId: "0190e6f2-0000-7000-8000-000000000000", Number: "+12025550111"})
		assert.Equal(t, codes.NotFound, status.Code(err))
		assert.Equal(t, "organization not found", status.Convert(err).Message())
	})
	t.Run("payment refused by billing", func(t *testing.T) {
		assertError(t, reply(tn.client), http.StatusPaymentRequired, errorBody{
			Code: "INSUFFICIENT_CREDITS", Message: "the reply needs 1 credits and the balance cannot cover them",
		})
	})
	t.Run("internal failure in billing", func(t *testing.T) {
		breakBilling(t, e.env)
		assertError(t, reply(tn.client), http.StatusInternalServerError, errorBody{Code: "INTERNAL", Message: "internal error"})
		// The gateway masks any 500; messaging's own gRPC callers (campaigns, polls) must get
		// the same mask from messaging itself.
		org, err := uuid.Parse(tn.org)
		require.NoError(t, err)
		ctx := caller.AppendToOutgoing(context.Background(), caller.Principal{OrgID: org, User: "service:campaigns", Access: caller.AccessWrite})
		_, err = e.messaging.Reply(ctx, &messagingv1.ReplyRequest{PhoneNumber: "+12025550143", Message: "hello"})
		assert.Equal(t, codes.Internal, status.Code(err))
		assert.Equal(t, "internal error", status.Convert(err).Message())
	})
	t.Run("billing stopped", func(t *testing.T) {
		// A second messaging and gateway over the same stack, whose billing address answers
		// nobody: billing is down for them.
		url := startWithoutBilling(t, e.env, jwksAddr)
		other := *e.env
		other.st = &stack.Stack{HTTPURL: url}
		c := &client{e: &other, token: tn.token, org: tn.org}
		assertError(t, reply(c), http.StatusServiceUnavailable, errorBody{
			Code: "UNAVAILABLE", Message: "a service this request needs is unavailable; retry later",
		})
	})
}

// breakBilling makes every billing write fail inside billing (its ledger is gone).
func breakBilling(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	db, err := pgx.Connect(ctx, e.dsn)
	require.NoError(t, err)
	defer db.Close(ctx)
	_, err = db.Exec(ctx, `ALTER TABLE billing.ledger RENAME TO ledger_gone`)
	require.NoError(t, err)
}

// startWithoutBilling runs another messaging service and gateway against e's database, orgs
// and contacts, with billing at an address nothing listens on, and returns the gateway's URL.
func startWithoutBilling(t *testing.T, e *env, jwksAddr string) string {
	t.Helper()
	contactsAddr := e.st.Addr(registry.Contacts)
	ctx, cancel := context.WithCancel(context.Background())
	r := envconfig.FromMap(map[string]string{
		"CHORUS_DATABASE_URL":  e.dsn,
		"CHORUS_REDIS_URL":     e.redisURL,
		"CHORUS_DEV_JWKS_ADDR": jwksAddr,
		"CHORUS_RATE_LIMIT":    "10000",
		"CHORUS_RATE_BURST":    "10000",
	})
	cfg := stack.ConfigFromEnv(r)
	require.NoError(t, r.Err())
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dead := servetest.ClosedAddr(t)
	peers := registry.Peers{registry.Orgs.Name: e.st.Addr(registry.Orgs), registry.Contacts.Name: contactsAddr, registry.Billing.Name: dead}
	cfg.Messaging.Wire(peers, quiet)
	cfg.Messaging.PublicURL = e.st.PublicURL
	msg, err := messaging.New(ctx, cfg.Messaging)
	require.NoError(t, err)
	msgLis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	httpLis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gwPeers := registry.Gateway.PeersFrom(r) // campaigns, polls, analytics: the defaults
	maps.Copy(gwPeers, peers)
	gwPeers[registry.Messaging.Name] = msgLis.Addr().String()
	cfg.Gateway.Wire(gwPeers, quiet)
	gw, err := gateway.New(ctx, cfg.Gateway)
	require.NoError(t, err)
	done := make(chan struct{}, 2)
	go func() { _ = msg.Serve(ctx, msgLis); done <- struct{}{} }()
	go func() { _ = gw.Serve(ctx, httpLis); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
		gw.Close()
		msg.Close()
	})
	return fmt.Sprintf("http://%s", httpLis.Addr())
}
