package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/sandbox"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/service"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/billing"
	"github.com/chorus-sms/chorus/services/messaging"
	"github.com/chorus-sms/chorus/services/orgs"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Close()
	redistest.Close()
	os.Exit(code)
}

// result is one chorusctl command line's exit status and output.
type result struct {
	code           int
	stdout, stderr string
}

func runCtl(args ...string) result {
	var stdout, stderr bytes.Buffer
	code := chorusctl(context.Background(), args, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func TestHelpAskedForIsPrintedOnStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		r := runCtl(args...)
		assert.Equal(t, 0, r.code, args)
		assert.Empty(t, r.stderr, args)
		assert.Contains(t, r.stdout, "chorusctl billing set-status --org ID --status", args)
		assert.Contains(t, r.stdout, "CHORUS_BILLING_ADDR", args)
	}
	for _, c := range commands {
		words := strings.Fields(c.name)
		for _, args := range [][]string{append(words, "--help"), append([]string{"help"}, words...)} {
			r := runCtl(args...)
			assert.Equal(t, 0, r.code, args)
			assert.Empty(t, r.stderr, args)
			assert.Equal(t, "usage:\n  chorusctl "+c.name+" "+c.flags+"\n\nflags:\n", r.stdout[:strings.Index(r.stdout, "flags:\n")+7], args)
			assert.Contains(t, r.stdout, "  -", "%v lists its flags", args)
		}
	}
	r := runCtl("org", "--help")
	assert.Equal(t, 0, r.code)
	assert.Equal(t, usageOf("org "), r.stdout)
}

func TestABadCommandLineExits2WithUsageOnStderr(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{nil, "usage:\n"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"org"}, `"org" needs one of its commands`},
		{[]string{"org", "destroy"}, `"org" needs one of its commands`},
		{[]string{"token", "--user", "alice", "--ttl", "forever"}, `invalid value "forever" for flag -ttl`},
		{[]string{"billing", "set-status", "--org", "x", "--state", "active"}, "flag provided but not defined: -state"},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
	} {
		r := runCtl(tc.args...)
		assert.Equal(t, 2, r.code, tc.args)
		assert.Empty(t, r.stdout, tc.args)
		assert.Contains(t, r.stderr, tc.says, tc.args)
		assert.Contains(t, r.stderr, "usage:\n  chorusctl ", tc.args)
	}
}

// Without CHORUS_PUBLIC_URL, chorusctl reaches the gateway where the stack runs it:
// CHORUS_HTTP_ADDR.
func TestSandboxInboundPostsToTheGatewaysListenAddress(t *testing.T) {
	got := make(chan string, 1)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path
		w.WriteHeader(http.StatusOK)
	}))
	defer gw.Close()
	t.Setenv("CHORUS_PUBLIC_URL", "")
	t.Setenv(registry.Gateway.AddrVar, strings.TrimPrefix(gw.URL, "http://"))

	r := runCtl("sandbox", "inbound", "--to", "+12025550100", "--from", "2025550111", "--body", "hi")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, sandbox.InboundPath, <-got)
	var out inboundResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Equal(t, 200, out.Status)
}

// An operator suspends and reactivates an account through a real billing service.
func TestBillingSetStatus(t *testing.T) {
	svc, err := billing.New(context.Background(), billing.Config{Storage: service.Storage{DatabaseURL: pgtest.NewDatabase(t)}})
	require.NoError(t, err)
	t.Setenv(registry.Billing.AddrVar, servetest.Serve(t, svc).Target())

	org := uuid.NewString()
	r := runCtl("plan", "set", "--org", org, "--pricing", "per_message")
	require.Equal(t, 0, r.code, r.stderr)
	for _, st := range []string{"suspended", "suspended", "active"} {
		r = runCtl("billing", "set-status", "--org", org, "--status", st)
		require.Equal(t, 0, r.code, r.stderr)
		assert.JSONEq(t, `{"organizationId":"`+org+`","billingStatus":"`+st+`"}`, r.stdout)
	}

	r = runCtl("billing", "set-status", "--org", org, "--status", "frozen")
	assert.Equal(t, 1, r.code)
	assert.Empty(t, r.stdout)
	assert.Equal(t, "chorusctl: invalid status: must be one of active, past_due, suspended, overage_warning, archived\n", r.stderr)
	r = runCtl("billing", "set-status", "--org", uuid.NewString(), "--status", "suspended")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "chorusctl: the organization has no billing account\n", r.stderr)
}

// An operator gives a number a rate of its own through a real messaging service: the number
// reports it, adding the number again without --mps keeps it, a new number has the service's
// default, and a rate out of range is refused naming the flag's field.
func TestNumberAddWithARate(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	redisURL, _ := redistest.New(t)
	orgSvc, err := orgs.New(ctx, orgs.Config{Storage: service.Storage{DatabaseURL: dsn, RedisURL: redisURL}})
	require.NoError(t, err)
	orgConn := servetest.Serve(t, orgSvc)
	r := envconfig.FromMap(map[string]string{"CHORUS_DATABASE_URL": dsn, "CHORUS_REDIS_URL": redisURL,
		"CHORUS_ORGS_ADDR": orgConn.Target(), "CHORUS_CONTACTS_ADDR": servetest.ClosedAddr(t),
		"CHORUS_BILLING_ADDR": servetest.ClosedAddr(t), "CHORUS_NUMBER_RATE": "7"})
	cfg := messaging.ConfigFromEnv(r)
	cfg.Peers = registry.Messaging.PeersFrom(r)
	require.NoError(t, r.Err())
	msgSvc, err := messaging.New(ctx, cfg)
	require.NoError(t, err)
	t.Setenv(registry.Messaging.AddrVar, servetest.Serve(t, msgSvc).Target())
	created, err := orgsv1.NewOrgsServiceClient(orgConn).CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "Acme"})
	require.NoError(t, err)
	org := created.GetOrganization().GetId()

	add := func(args ...string) addedNumber {
		t.Helper()
		res := runCtl(append([]string{"number", "add", "--org", org}, args...)...)
		require.Equal(t, 0, res.code, res.stderr)
		var n addedNumber
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &n))
		return n
	}
	fast := add("--number", "+12025550100", "--mps", "30")
	assert.EqualValues(t, 30, fast.MessagesPerSecond)
	assert.True(t, fast.IsDefault)
	again := add("--number", "(202) 555-0100")
	assert.Equal(t, fast.PhoneNumberID, again.PhoneNumberID)
	assert.EqualValues(t, 30, again.MessagesPerSecond, "re-adding keeps the rate")
	assert.EqualValues(t, 7, add("--number", "+12025550101").MessagesPerSecond, "CHORUS_NUMBER_RATE by default")
	assert.EqualValues(t, 1, add("--number", "+12025550101", "--mps", "1").MessagesPerSecond)

	res := runCtl("number", "add", "--org", org, "--number", "+12025550102", "--mps", "100000")
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "messagesPerSecond")
	res = runCtl("number", "add", "--org", org, "--number", "+12025550102", "--mps", "-2")
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "--mps must be a positive number")
}
