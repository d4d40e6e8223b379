package gateway_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/servetest"
)

func TestNotReadyWhileAServiceIsDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *gateway.Config) { c.Peers[registry.Contacts.Name] = servetest.ClosedAddr(t) })
	res := e.do(request{method: http.MethodGet, path: "/readyz"})
	assert.Equal(t, http.StatusServiceUnavailable, res.status, "%s", res.body)
	services, _ := res.json(t)["services"].(map[string]any)
	assert.Equal(t, "Unavailable", services["contacts"], "names the service that failed: %s", res.body)
	assert.Equal(t, http.StatusOK, e.do(request{method: http.MethodGet, path: "/healthz"}).status, "alive while not ready")
}

// The gateway keeps the durable Idempotency-Key answers in its own database: while it does not
// answer, the gateway is not ready, and says so.
func TestNotReadyWhileItsDatabaseIsDown(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	e := newEnv(t, func(c *gateway.Config) { c.DatabaseURL = dsn })
	require.Equal(t, http.StatusOK, e.do(request{method: http.MethodGet, path: "/readyz"}).status)

	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	admin, err := pgx.Connect(context.Background(), pgtest.AdminDSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	name := pgx.Identifier{cfg.Database}.Sanitize()
	_, err = admin.Exec(context.Background(), `ALTER DATABASE `+name+` WITH ALLOW_CONNECTIONS false`)
	require.NoError(t, err)
	_, err = admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, cfg.Database)
	require.NoError(t, err)

	res := e.do(request{method: http.MethodGet, path: "/readyz"})
	assert.Equal(t, http.StatusServiceUnavailable, res.status, "%s", res.body)
	assert.Equal(t, "unavailable", res.json(t)["database"], "%s", res.body)
	assert.Equal(t, "SERVING", res.json(t)["services"].(map[string]any)["contacts"], "the services are fine")

	_, err = admin.Exec(context.Background(), `ALTER DATABASE `+name+` WITH ALLOW_CONNECTIONS true`)
	require.NoError(t, err)
	// A probe is asked again and again: one soon finds the database back (a pooled session the
	// outage ended fails its ping once and is replaced).
	assert.Eventually(t, func() bool {
		res := e.do(request{method: http.MethodGet, path: "/readyz"})
		return res.status == http.StatusOK && res.json(t)["database"] == "ok"
	}, 10*time.Second, 100*time.Millisecond, "ready again once it answers")
}

func TestReadyWhenEveryServiceServes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.do(request{method: http.MethodGet, path: "/readyz"})
	assert.Equal(t, http.StatusOK, res.status, "%s", res.body)
	assert.Equal(t, map[string]any{"orgs": "SERVING", "contacts": "SERVING", "messaging": "SERVING"}, res.json(t)["services"])
}

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("reader", "read")
	require.Equal(t, http.StatusOK, e.get("/api/contacts/0190d1f8-0000-7000-8000-000000000001", "reader", org).status)
	require.Equal(t, http.StatusUnauthorized, e.do(request{method: http.MethodGet, path: "/api/contacts"}).status)

	res := e.do(request{method: http.MethodGet, path: "/openapi.json"})
	require.Equal(t, http.StatusOK, res.status)
	assert.Equal(t, "application/json", res.header.Get("Content-Type"))
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(res.body, &doc))
	assert.Contains(t, doc.Paths, "/api/contacts")
	assert.Contains(t, doc.Paths, "/api/segments/{id}")

	res = e.do(request{method: http.MethodGet, path: "/metrics"})
	require.Equal(t, http.StatusOK, res.status)
	metrics := string(res.body)
	assert.Contains(t, metrics, `chorus_gateway_http_requests_total{method="GET",route="/api/contacts/{id}",status="200"} 1`, "labelled by route pattern, not path")
	assert.Contains(t, metrics, `chorus_gateway_http_requests_total{method="GET",route="/api/**",status="401"} 1`)
	assert.Contains(t, metrics, `chorus_gateway_http_request_duration_seconds_count{method="GET",route="/api/contacts/{id}",status="200"} 1`)
	assert.NotContains(t, metrics, "0190d1f8-0000-7000-8000-000000000001")
	assert.Contains(t, e.logs.String(), `"route":"/api/contacts/{id}"`)
}

func TestServeShutsDownWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	key := newECKey(t, "ec-1")
	redis := redisURL(t)
	orgsAddr, _ := startOrgs(t, redis)
	gw, err := gateway.New(context.Background(), gateway.Config{
		RedisURL: redis, DatabaseURL: pgtest.NewDatabase(t), JWKSURL: newIDP(t, key).url, Issuer: issuer, Audience: audience, RateLimit: 1, RateBurst: 1,
		Wiring: process.Wiring{Logger: quietLogger(), Peers: registry.Peers{"orgs": orgsAddr, "contacts": servetest.ClosedAddr(t)}},
	})
	require.NoError(t, err)
	defer gw.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, lis) }()
	res := doHTTP(t, "http://"+lis.Addr().String(), request{method: http.MethodGet, path: "/healthz"})
	assert.Equal(t, http.StatusOK, res.status)
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the context ended")
	}
}

func TestNewFailsWhenTheJWKSCannotBeFetched(t *testing.T) {
	t.Parallel()
	_, err := gateway.New(context.Background(), gateway.Config{
		RedisURL: redisURL(t), DatabaseURL: pgtest.NewDatabase(t), JWKSURL: "http://" + servetest.ClosedAddr(t) + "/jwks.json", Issuer: issuer, Audience: audience,
		RateLimit: 1, RateBurst: 1,
		Wiring: process.Wiring{Logger: quietLogger(), Peers: registry.Peers{"orgs": servetest.ClosedAddr(t), "contacts": servetest.ClosedAddr(t)}},
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "JWKS")
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	r := envconfig.FromMap(map[string]string{})
	cfg := gateway.ConfigFromEnv(r)
	err := r.Err()
	require.Error(t, err)
	for _, name := range []string{"CHORUS_JWT_JWKS_URL", "CHORUS_JWT_ISSUER", "CHORUS_JWT_AUDIENCE"} {
		assert.Contains(t, err.Error(), name)
	}
	// The listener defaults to the registry's address (the services' addresses are
	// registry.Gateway.PeersFrom's, which Setup adds).
	assert.Equal(t, registry.Gateway.Addr, cfg.HTTPAddr)
	assert.Equal(t, 30*time.Second, cfg.JWTLeeway)
	assert.Equal(t, 50, cfg.RateLimit)
	assert.Equal(t, 100, cfg.RateBurst)
	assert.Equal(t, int64(1<<20), cfg.MaxBodyBytes)

	r = envconfig.FromMap(map[string]string{
		"CHORUS_JWT_JWKS_URL": "not a url", "CHORUS_JWT_ISSUER": issuer, "CHORUS_JWT_AUDIENCE": audience,
		"CHORUS_RATE_LIMIT": "0", "CHORUS_JWT_LEEWAY": "soon",
	})
	gateway.ConfigFromEnv(r)
	err = r.Err()
	require.Error(t, err)
	for _, name := range []string{"CHORUS_JWT_JWKS_URL", "CHORUS_RATE_LIMIT", "CHORUS_JWT_LEEWAY"} {
		assert.Contains(t, err.Error(), name)
	}
}
