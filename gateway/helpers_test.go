package gateway_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/service"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/orgs"
)

const (
	issuer   = "https://idp.test"
	audience = "chorus-api"
	leeway   = 30 * time.Second
)

func TestMain(m *testing.M) {
	pgtest.Main(m, redistest.Close)
}

// redisURL is a Redis database of the test's own.
func redisURL(t testing.TB) string {
	t.Helper()
	url, _ := redistest.New(t)
	return url
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// ---- identity provider ----

// signingKey is one key of the test identity provider.
type signingKey struct {
	kid    string
	method jwt.SigningMethod
	priv   any
	jwk    map[string]string
}

var rsaKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func newRSAKey(kid string) signingKey {
	k := rsaKey()
	return signingKey{kid: kid, method: jwt.SigningMethodRS256, priv: k, jwk: map[string]string{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
		"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes()),
	}}
}

func newECKey(t testing.TB, kid string) signingKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	pub, err := k.PublicKey.ECDH()
	require.NoError(t, err)
	raw := pub.Bytes() // 0x04 || X || Y
	return signingKey{kid: kid, method: jwt.SigningMethodES256, priv: k, jwk: map[string]string{
		"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
		"x": b64(raw[1:33]), "y": b64(raw[33:65]),
	}}
}

// idp publishes a JWKS over HTTP; publish swaps the served keys (rotation).
type idp struct {
	url string
	doc atomic.Pointer[[]byte]
}

func newIDP(t testing.TB, keys ...signingKey) *idp {
	t.Helper()
	p := &idp{}
	p.publish(t, keys...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*p.doc.Load())
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL + "/.well-known/jwks.json"
	return p
}

func (p *idp) publish(t testing.TB, keys ...signingKey) {
	t.Helper()
	jwks := make([]map[string]string, 0, len(keys))
	for _, k := range keys {
		jwks = append(jwks, k.jwk)
	}
	doc, err := json.Marshal(map[string]any{"keys": jwks})
	require.NoError(t, err)
	p.doc.Store(&doc)
}

// claims are valid claims for user, expiring in an hour.
func claims(user string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": issuer, "aud": audience, "sub": user,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

func sign(t testing.TB, k signingKey, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(k.method, c)
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.priv)
	require.NoError(t, err)
	return s
}

// ---- orgs service ----

// orgsSchema is the schema every orgs database starts with, migrated by the service itself.
var orgsSchema = pgtest.NewTemplate("gateway_orgs", func(ctx context.Context, dsn string) error {
	svc, err := orgs.New(ctx, orgs.Config{Storage: service.Storage{DatabaseURL: dsn, RedisURL: "redis://127.0.0.1:6379/0"}, Wiring: process.Wiring{Logger: quietLogger()}})
	if err != nil {
		return err
	}
	svc.Close() // it never served: nothing was cached in Redis
	return nil
})

// startOrgs runs the orgs service on its own database, caching in the Redis database at
// redisURL.
func startOrgs(t testing.TB, redisURL string) (string, orgsv1.OrgsServiceClient) {
	t.Helper()
	svc, err := orgs.New(context.Background(), orgs.Config{
		Storage: service.Storage{DatabaseURL: orgsSchema.NewDatabase(t), RedisURL: redisURL}, Wiring: process.Wiring{Logger: quietLogger()},
	})
	require.NoError(t, err)
	conn := servetest.Serve(t, svc)
	return conn.Target(), orgsv1.NewOrgsServiceClient(conn)
}

// ---- contacts stand-in ----

// stubContacts is a real gRPC ContactsService that records what the gateway forwarded and
// answers from a script; the real service is tested in its own module.
type stubContacts struct {
	contactsv1.UnimplementedContactsServiceServer
	mu    sync.Mutex
	calls []metadata.MD
	errs  map[string]error                 // GetContact answers by id
	page  *contactsv1.ListContactsResponse // ListContacts' answer when set
}

func (s *stubContacts) record(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, md)
}

// lastCall returns the metadata of the latest call and how many calls there were.
func (s *stubContacts) lastCall() (metadata.MD, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		return nil, 0
	}
	return s.calls[len(s.calls)-1], len(s.calls)
}

func (s *stubContacts) ListContacts(ctx context.Context, req *contactsv1.ListContactsRequest) (*contactsv1.ListContactsResponse, error) {
	s.record(ctx)
	s.mu.Lock()
	page := s.page
	s.mu.Unlock()
	if page != nil {
		return page, nil
	}
	return &contactsv1.ListContactsResponse{Limit: req.GetLimit().GetValue(), SortBy: "updated_at"}, nil
}

func (s *stubContacts) CreateContact(ctx context.Context, req *contactsv1.CreateContactRequest) (*contactsv1.CreateContactResponse, error) {
	s.record(ctx)
	if err := grpc.SetHeader(ctx, metadata.Pairs(httpcode.Header, "201", "x-internal-note", "secret")); err != nil {
		return nil, err
	}
	return &contactsv1.CreateContactResponse{Contact: &contactsv1.CreatedContact{
		Id: "0190d1f8-0000-7000-8000-0000000000c1", FirstName: req.GetFirstName(), Outcome: "created",
	}}, nil
}

func (s *stubContacts) GetContact(ctx context.Context, req *contactsv1.GetContactRequest) (*contactsv1.GetContactResponse, error) {
	s.record(ctx)
	if err, ok := s.errs[req.GetId()]; ok {
		return nil, err
	}
	return &contactsv1.GetContactResponse{Contact: &contactsv1.Contact{Id: req.GetId()}}, nil
}

// answerPages makes ListContacts answer page.
func (s *stubContacts) answerPages(page *contactsv1.ListContactsResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.page = page
}

// startContacts serves stub on a loopback port with the standard health service (SERVING).
func startContacts(t testing.TB, stub *stubContacts) string {
	t.Helper()
	srv := grpc.NewServer()
	contactsv1.RegisterContactsServiceServer(srv, stub)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// ---- messaging stand-in ----

// stubMessaging is a real gRPC MessagingService that records what the gateway forwarded and
// answers from a script (see fail and link): unscripted links are not found.
type stubMessaging struct {
	messagingv1.UnimplementedMessagingServiceServer
	mu       sync.Mutex
	webhooks []*messagingv1.HandleWebhookRequest
	clicks   []*messagingv1.FollowShortLinkRequest
	phones   []string // phone_number of each conversation call
	mds      []metadata.MD
	errs     map[string]error  // by webhook provider or link code
	links    map[string]string // target by link code
}

// fail makes calls for a webhook provider or a link code answer err.
func (s *stubMessaging) fail(key string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.errs == nil {
		s.errs = map[string]error{}
	}
	s.errs[key] = err
}

// link makes the short link code point at target.
func (s *stubMessaging) link(code, target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.links == nil {
		s.links = map[string]string{}
	}
	s.links[code] = target
}

// record keeps the call and returns the scripted error for key, if any.
func (s *stubMessaging) record(ctx context.Context, req proto.Message, key string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mds = append(s.mds, md)
	switch r := req.(type) {
	case *messagingv1.HandleWebhookRequest:
		s.webhooks = append(s.webhooks, r)
	case *messagingv1.FollowShortLinkRequest:
		s.clicks = append(s.clicks, r)
	case interface{ GetPhoneNumber() string }:
		s.phones = append(s.phones, r.GetPhoneNumber())
	}
	return s.errs[key]
}

// calls returns how many calls reached the stub and the metadata of the latest.
func (s *stubMessaging) calls() (int, metadata.MD) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mds) == 0 {
		return 0, nil
	}
	return len(s.mds), s.mds[len(s.mds)-1]
}

func (s *stubMessaging) lastWebhook() *messagingv1.HandleWebhookRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.webhooks) == 0 {
		return nil
	}
	return s.webhooks[len(s.webhooks)-1]
}

func (s *stubMessaging) lastClick() *messagingv1.FollowShortLinkRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.clicks) == 0 {
		return nil
	}
	return s.clicks[len(s.clicks)-1]
}

func (s *stubMessaging) lastPhone() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.phones) == 0 {
		return ""
	}
	return s.phones[len(s.phones)-1]
}

func (s *stubMessaging) HandleWebhook(ctx context.Context, req *messagingv1.HandleWebhookRequest) (*messagingv1.HandleWebhookResponse, error) {
	if err := s.record(ctx, req, req.GetProvider()); err != nil {
		return nil, err
	}
	return &messagingv1.HandleWebhookResponse{ContentType: "text/xml", Body: "<Response></Response>"}, nil
}

func (s *stubMessaging) FollowShortLink(ctx context.Context, req *messagingv1.FollowShortLinkRequest) (*messagingv1.FollowShortLinkResponse, error) {
	if err := s.record(ctx, req, req.GetCode()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	target, ok := s.links[req.GetCode()]
	if !ok {
		return nil, apierr.NotFound("link not found")
	}
	return &messagingv1.FollowShortLinkResponse{Url: target}, nil
}

func (s *stubMessaging) ListMessages(ctx context.Context, req *messagingv1.ListMessagesRequest) (*messagingv1.ListMessagesResponse, error) {
	if err := s.record(ctx, req, ""); err != nil {
		return nil, err
	}
	return &messagingv1.ListMessagesResponse{Timezone: "America/New_York"}, nil
}

// Reply answers a sent message; fail(phone, err) makes it fail.
func (s *stubMessaging) Reply(ctx context.Context, req *messagingv1.ReplyRequest) (*messagingv1.ReplyResponse, error) {
	if err := s.record(ctx, req, req.GetPhoneNumber()); err != nil {
		return nil, err
	}
	return &messagingv1.ReplyResponse{Success: true, Provider: "sandbox", ProviderMessageId: "SM" + req.GetMessage()}, nil
}

func (s *stubMessaging) UpdateConversation(ctx context.Context, req *messagingv1.UpdateConversationRequest) (*messagingv1.UpdateConversationResponse, error) {
	if err := s.record(ctx, req, ""); err != nil {
		return nil, err
	}
	return &messagingv1.UpdateConversationResponse{Conversation: &messagingv1.Conversation{
		PhoneNumber: req.GetPhoneNumber(), IsStarred: req.GetIsStarred(),
	}}, nil
}

// startMessaging serves stub on a loopback port with the standard health service (SERVING).
func startMessaging(t testing.TB, stub *stubMessaging) string {
	t.Helper()
	srv := grpc.NewServer()
	messagingv1.RegisterMessagingServiceServer(srv, stub)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// ---- the gateway under test ----

// env is a gateway served by httptest in front of a real orgs service, contacts and messaging
// stand-ins (or nothing, when the test points an address elsewhere) and a local identity
// provider.
type env struct {
	t         testing.TB
	url       string
	orgs      orgsv1.OrgsServiceClient
	idp       *idp
	key       signingKey // the EC key tokens are signed with unless a test says otherwise
	rsa       signingKey
	contacts  *stubContacts
	messaging *stubMessaging
	logs      *syncBuffer
	cfg       gateway.Config // what the gateway at url was built from, to start another like it
}

type envOption func(*gateway.Config)

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, key: newECKey(t, "ec-1"), rsa: newRSAKey("rsa-1"), contacts: &stubContacts{}, messaging: &stubMessaging{}, logs: &syncBuffer{}}
	e.idp = newIDP(t, e.key, e.rsa)
	redis := redisURL(t)
	orgsAddr, orgsClient := startOrgs(t, redis)
	e.orgs = orgsClient
	cfg := gateway.Config{
		RedisURL: redis, DatabaseURL: pgtest.NewDatabase(t), JWKSURL: e.idp.url, Issuer: issuer, Audience: audience, JWTLeeway: leeway,
		RateLimit: 1000, RateBurst: 1000,
		Wiring: process.Wiring{
			Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Peers: registry.Peers{
				registry.Orgs.Name: orgsAddr, registry.Contacts.Name: startContacts(t, e.contacts),
				registry.Messaging.Name: startMessaging(t, e.messaging),
			},
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	e.cfg = cfg
	e.url = serveGateway(t, cfg)
	return e
}

func serveGateway(t testing.TB, cfg gateway.Config) string {
	t.Helper()
	gw, err := gateway.New(context.Background(), cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() {
		srv.Close()
		gw.Close()
	})
	return srv.URL
}

// member creates an organization with user at access ("read", "write", "admin").
func (e *env) member(user, access string) string {
	e.t.Helper()
	ctx := context.Background()
	res, err := e.orgs.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "org of " + user})
	require.NoError(e.t, err)
	org := res.GetOrganization().GetId()
	e.grant(org, user, access)
	return org
}

func (e *env) grant(org, user, access string) {
	e.t.Helper()
	level := orgsv1.Access(orgsv1.Access_value["ACCESS_"+strings.ToUpper(access)])
	_, err := e.orgs.SetMembership(context.Background(), &orgsv1.SetMembershipRequest{OrganizationId: org, UserSubject: user, Access: level})
	require.NoError(e.t, err)
}

func (e *env) token(user string) string {
	e.t.Helper()
	return sign(e.t, e.key, claims(user))
}

// response is an HTTP answer with its body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

// apiErr returns the "error" object of an error body.
func (r response) apiErr(t *testing.T) map[string]any {
	t.Helper()
	e, ok := r.json(t)["error"].(map[string]any)
	require.True(t, ok, "not an error body: %s", r.body)
	return e
}

type request struct {
	method, path string
	token, org   string
	body         io.Reader
	header       http.Header
}

func (e *env) do(r request) response {
	e.t.Helper()
	return doHTTP(e.t, e.url, r)
}

func doHTTP(t testing.TB, base string, r request) response {
	t.Helper()
	req, err := http.NewRequest(r.method, base+r.path, r.body)
	require.NoError(t, err)
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.org != "" {
		req.Header.Set("X-Organization-Id", r.org)
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{status: res.StatusCode, header: res.Header, body: body}
}

// get is an authenticated GET as user in org.
func (e *env) get(path, user, org string) response {
	e.t.Helper()
	return e.do(request{method: http.MethodGet, path: path, token: e.token(user), org: org})
}

// syncBuffer collects log output written from request goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// principal reads the forwarded principal back from a call's metadata.
func principal(t *testing.T, md metadata.MD) tenant.Principal {
	t.Helper()
	p, ok := tenant.FromIncoming(metadata.NewIncomingContext(context.Background(), md))
	require.True(t, ok, "no principal in %v", md)
	return p
}
