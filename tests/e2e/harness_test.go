package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/sandbox"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/stack"
)

// env is one running stack on its own database, driven over HTTP like any client.
type env struct {
	t         *testing.T
	st        *stack.Stack
	orgs      orgsv1.OrgsServiceClient
	messaging messagingv1.MessagingServiceClient
	http      *http.Client
	// sandboxToken signs the sandbox carrier's webhooks.
	sandboxToken string
	// dsn and redisURL are the stack's database and Redis, for tests that reach behind it.
	dsn, redisURL string
}

// stackDB is the schema of every service, migrated by starting the whole stack once; each
// stack's database is a copy of it.
var stackDB = pgtest.NewTemplate("e2e_stack", func(ctx context.Context, dsn string) error {
	redisURL, release, err := redistest.Reserve()
	if err != nil {
		return err
	}
	defer func() { _ = release() }()
	dir, err := os.MkdirTemp("", "chorus-e2e-template-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	vars := stackVars(dir)
	vars["CHORUS_DATABASE_URL"], vars["CHORUS_REDIS_URL"] = dsn, redisURL
	r := envconfig.FromMap(vars)
	cfg := stack.ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		return err
	}
	cfg.Logger = stackLogger()
	st, err := stack.Start(ctx, cfg)
	if err != nil {
		return err
	}
	st.Close()
	return nil
})

// stackVars are the CHORUS_* variables of a test stack on loopback listeners, its dev key in dir.
func stackVars(dir string) map[string]string {
	vars := map[string]string{
		"CHORUS_DEV_JWKS_ADDR": "127.0.0.1:0",
		"CHORUS_DEV_KEY":       filepath.Join(dir, "dev-key.pem"),
		"CHORUS_RATE_LIMIT":    "10000",
		"CHORUS_RATE_BURST":    "10000",
		"CHORUS_SANDBOX_DELAY": "50ms", // sandbox delivery reports arrive quickly
		// Outbound webhooks' receivers are httptest servers on loopback, as `make run` allows.
		"CHORUS_WEBHOOKS_ALLOW_LOOPBACK": "true",
	}
	for _, svc := range registry.All {
		vars[svc.AddrVar] = "127.0.0.1:0" // every service, the gateway too, on a free port
	}
	return vars
}

// stackLogger discards the stack's logs unless CHORUS_E2E_LOG is set, for reading what the
// services did while a test failed: go test -run X -v with CHORUS_E2E_LOG=1.
func stackLogger() *slog.Logger {
	if os.Getenv("CHORUS_E2E_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newEnv starts the whole stack in-process on loopback listeners with a fresh database and
// Redis database. overrides replace CHORUS_* variables (e.g. a small rate limit).
func newEnv(t *testing.T, overrides map[string]string) *env {
	t.Helper()
	vars := stackVars(t.TempDir())
	for k, v := range overrides {
		vars[k] = v
	}
	if _, ok := vars["CHORUS_REDIS_URL"]; !ok {
		vars["CHORUS_REDIS_URL"], _ = redistest.New(t)
	}
	if _, ok := vars["CHORUS_DATABASE_URL"]; !ok {
		vars["CHORUS_DATABASE_URL"] = stackDB.NewDatabase(t)
	}
	r := envconfig.FromMap(vars)
	cfg := stack.ConfigFromEnv(r)
	require.NoError(t, r.Err())
	cfg.Logger = stackLogger()
	st, err := stack.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	registerGateway(t, st.HTTPURL)
	return &env{
		t: t, st: st, orgs: orgsv1.NewOrgsServiceClient(dial(t, st.Addr(registry.Orgs))),
		messaging:    messagingv1.NewMessagingServiceClient(dial(t, st.Addr(registry.Messaging))),
		http:         &http.Client{Timeout: 30 * time.Second, Transport: testTransport(t)},
		sandboxToken: cfg.Messaging.SandboxToken,
		dsn:          vars["CHORUS_DATABASE_URL"], redisURL: vars["CHORUS_REDIS_URL"],
	}
}

// noFollow is a client that answers redirects instead of following them, its answers
// validated like e.http's.
func (e *env) noFollow() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second, Transport: testTransport(e.t),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// dial connects to one of the stack's internal gRPC services, as chorusctl does.
func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// org creates an organization and returns its id.
func (e *env) org(name string) string {
	e.t.Helper()
	res, err := e.orgs.CreateOrganization(context.Background(), &orgsv1.CreateOrganizationRequest{Name: name, Sandbox: true})
	require.NoError(e.t, err)
	return res.GetOrganization().GetId()
}

// member grants user access ("read", "write" or "admin") to org.
func (e *env) member(org, user, access string) {
	e.t.Helper()
	level := orgsv1.Access(orgsv1.Access_value["ACCESS_"+strings.ToUpper(access)])
	_, err := e.orgs.SetMembership(context.Background(), &orgsv1.SetMembershipRequest{OrganizationId: org, UserSubject: user, Access: level})
	require.NoError(e.t, err)
}

// as returns a client acting as user in org, with a fresh token.
func (e *env) as(user, org string) *client {
	e.t.Helper()
	tok, err := e.st.Key.Sign(user, time.Hour)
	require.NoError(e.t, err)
	return &client{e: e, token: tok, org: org}
}

// newMember makes a fresh org with a member at the given access and returns its client.
func (e *env) newMember(access string) *client {
	e.t.Helper()
	org := e.org("org-" + strconv.FormatInt(time.Now().UnixNano(), 36))
	user := "user-" + org
	e.member(org, user, access)
	return e.as(user, org)
}

// addNumber gives org a sending number (E.164 or any US format) and returns its id.
func (e *env) addNumber(org, number string, isDefault bool) string {
	e.t.Helper()
	res, err := e.messaging.AddNumber(context.Background(), &messagingv1.AddNumberRequest{OrganizationId: org, Number: number, IsDefault: isDefault})
	require.NoError(e.t, err)
	return res.GetPhoneNumberId()
}

// newMemberWithNumber makes a fresh org whose default sending number is number, with a member
// at the given access, and returns its client.
func (e *env) newMemberWithNumber(access, number string) *client {
	e.t.Helper()
	c := e.newMember(access)
	c.addNumber(number, true)
	return c
}

// inbound delivers a text to the stack's sandbox webhook as the sandbox carrier would: a
// Twilio-style form under a fresh MessageSid, signed with the sandbox token (chorusctl's
// `sandbox inbound` path). to and from are sent as given.
func (e *env) inbound(to, from, body string, media ...string) response {
	e.t.Helper()
	form, err := sandbox.Text{To: to, From: from, Body: body, Media: media}.Form()
	require.NoError(e.t, err)
	return e.postInbound(form)
}

// postInbound posts form, signed, to the sandbox webhook; tests that need a fixed MessageSid
// or an odd field build the form themselves.
func (e *env) postInbound(form url.Values) response {
	e.t.Helper()
	res, err := sandbox.Post(context.Background(), e.http, e.st.PublicURL, e.sandboxToken, form)
	require.NoError(e.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

type client struct {
	e     *env
	token string
	org   string
}

// addNumber gives the client's org a sending number and returns its id.
func (c *client) addNumber(number string, isDefault bool) string {
	c.e.t.Helper()
	return c.e.addNumber(c.org, number, isDefault)
}

// response is an HTTP answer with its body read.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map.
func (r response) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	return m
}

// ErrCode returns error.code of an error body.
func (r response) ErrCode(t *testing.T) string {
	t.Helper()
	e, _ := r.JSON(t)["error"].(map[string]any)
	require.NotNil(t, e, "not an error body: %s", r.Body)
	code, _ := e["code"].(string)
	return code
}

// ErrFields returns error.fields of an error body.
func (r response) ErrFields(t *testing.T) map[string]any {
	t.Helper()
	e, _ := r.JSON(t)["error"].(map[string]any)
	require.NotNil(t, e, "not an error body: %s", r.Body)
	f, _ := e["fields"].(map[string]any)
	return f
}

// do sends a request; body may be nil, a []byte sent as is, or a value encoded as JSON.
func (c *client) do(method, path string, body any) response {
	c.e.t.Helper()
	return c.doWith(method, path, body, nil)
}

func (c *client) doWith(method, path string, body any, header http.Header) response {
	t := c.e.t
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader: // streamed, of no declared length (chunked)
		rd = b
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.e.st.HTTPURL+path, rd)
	require.NoError(t, err)
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	c.authorize(req, contentType)
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := c.e.http.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

// authorize sets the client's token and organization on req, and its Content-Type if any.
func (c *client) authorize(req *http.Request, contentType string) {
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.org != "" {
		req.Header.Set("x-organization-id", c.org)
	}
}

// eventually polls f until it returns true or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if f() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("not within %s: %s", within, what)
}
