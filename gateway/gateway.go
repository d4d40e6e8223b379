// Package gateway is the public REST edge of Chorus: it authenticates the bearer JWT, checks the
// caller's access to the organization in x-organization-id, rate-limits per organization and
// user, and translates REST to the services' gRPC APIs with grpc-gateway, mapping their errors
// to the one REST error body. It is the public entry used by its own main and by the all-in-one
// binary.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/chorus-sms/chorus/gateway/migrations"
	"github.com/chorus-sms/chorus/pkg/clients"
	messagingclient "github.com/chorus-sms/chorus/pkg/clients/messaging"
	orgsclient "github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
)

// Config is the gateway process configuration. Zero durations and sizes take the defaults
// ConfigFromEnv documents, except JWTLeeway, where zero means no leeway.
type Config struct {
	HTTPAddr string // CHORUS_HTTP_ADDR: where the REST API listens (used by main and the stack)
	RedisURL string // CHORUS_REDIS_URL: rate-limit counters, idempotency keys
	// DatabaseURL (CHORUS_DATABASE_URL) holds the idempotency keys of the requests that send
	// or spend, in the gateway's own schema.
	DatabaseURL string

	JWKSURL     string        // CHORUS_JWT_JWKS_URL: the identity provider's key set
	Issuer      string        // CHORUS_JWT_ISSUER: required iss
	Audience    string        // CHORUS_JWT_AUDIENCE: required aud
	JWTLeeway   time.Duration // CHORUS_JWT_LEEWAY: clock skew allowed on exp and nbf
	JWKSRefresh time.Duration // CHORUS_JWT_JWKS_REFRESH: how often the key set is re-read

	RateLimit int // CHORUS_RATE_LIMIT: sustained requests per second per (org, user)
	RateBurst int // CHORUS_RATE_BURST: requests allowed at once per (org, user)

	MaxBodyBytes   int64         // CHORUS_HTTP_MAX_BODY_BYTES: larger request bodies answer 413
	MaxImportBytes int64         // CHORUS_HTTP_MAX_IMPORT_BYTES: the same for a contact import's CSV file
	RequestTimeout time.Duration // CHORUS_HTTP_REQUEST_TIMEOUT: deadline of each backend call

	// Wiring is the logger and the addresses of the services (registry.Gateway.Needs): orgs and
	// contacts are required; without billing, messaging, campaigns, polls, analytics or webhooks that
	// service's routes are left out (without messaging, also the carrier webhooks and the
	// short-link redirects).
	process.Wiring
}

// Defaults of the settings that have one.
const (
	defaultMaxBodyBytes   = 1 << 20
	defaultMaxImportBytes = 1 << 30 // about ten million rows
	defaultRequestTimeout = 30 * time.Second
	defaultJWKSRefresh    = 15 * time.Minute
)

// Schema is the gateway's PostgreSQL schema (its idempotency keys).
const Schema = "gateway"

// dbMaxConns bounds the gateway's pool: a key's claim and completion are one statement each.
const dbMaxConns = 4

// shutdownGrace bounds how long in-flight requests may finish after SIGTERM: the registry's
// Drain, which the pod's termination grace period outlasts.
var shutdownGrace = registry.Gateway.Drain

// ConfigFromEnv reads the gateway's own CHORUS_* variables; Setup adds the services'
// addresses.
func ConfigFromEnv(r *envconfig.Reader) Config {
	return Config{
		HTTPAddr:       registry.Gateway.ListenFrom(r),
		RedisURL:       r.URL("CHORUS_REDIS_URL", "redis://127.0.0.1:6379/0"),
		DatabaseURL:    r.Secret("CHORUS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/chorus?sslmode=disable"),
		JWKSURL:        requiredURL(r, "CHORUS_JWT_JWKS_URL"),
		Issuer:         r.Required("CHORUS_JWT_ISSUER"),
		Audience:       r.Required("CHORUS_JWT_AUDIENCE"),
		JWTLeeway:      r.DurationOrZero("CHORUS_JWT_LEEWAY", 30*time.Second),
		JWKSRefresh:    r.Duration("CHORUS_JWT_JWKS_REFRESH", defaultJWKSRefresh),
		RateLimit:      r.Int("CHORUS_RATE_LIMIT", 50, 1),
		RateBurst:      r.Int("CHORUS_RATE_BURST", 100, 1),
		MaxBodyBytes:   int64(r.Int("CHORUS_HTTP_MAX_BODY_BYTES", defaultMaxBodyBytes, 1)),
		RequestTimeout: r.Duration("CHORUS_HTTP_REQUEST_TIMEOUT", defaultRequestTimeout),
		MaxImportBytes: int64(r.Int("CHORUS_HTTP_MAX_IMPORT_BYTES", defaultMaxImportBytes, 1)),
	}
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(registry.Gateway, ConfigFromEnv, New)

func requiredURL(r *envconfig.Reader, name string) string {
	if r.Required(name) == "" {
		return ""
	}
	return r.URL(name, "")
}

func (c Config) withDefaults() (Config, error) {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = defaultMaxBodyBytes
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = defaultRequestTimeout
	}
	if c.MaxImportBytes <= 0 {
		c.MaxImportBytes = defaultMaxImportBytes
	}
	if c.JWKSRefresh <= 0 {
		c.JWKSRefresh = defaultJWKSRefresh
	}
	var errs []error
	for _, f := range []struct{ name, value string }{
		{"JWKSURL", c.JWKSURL}, {"Issuer", c.Issuer}, {"Audience", c.Audience}, {"DatabaseURL", c.DatabaseURL},
		{"Peers[orgs]", c.Peers[registry.Orgs.Name]}, {"Peers[contacts]", c.Peers[registry.Contacts.Name]},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", f.name))
		}
	}
	if c.RateLimit < 1 || c.RateBurst < 1 {
		errs = append(errs, errors.New("RateLimit and RateBurst must be at least 1"))
	}
	if c.JWTLeeway < 0 {
		errs = append(errs, errors.New("JWTLeeway must not be negative"))
	}
	return c, errors.Join(errs...)
}

// Gateway is a configured REST gateway.
type Gateway struct {
	cfg      Config
	log      *slog.Logger
	backends []backend
	rdb      *redis.Client
	subRDB   *redis.Client      // the membership change subscription and the idempotency keys
	pool     *pgxpool.Pool      // the durable idempotency keys
	stopJWKS context.CancelFunc // ends the background work: key refresh, change subscription, rate-limit decisions, key sweep
	handler  http.Handler
}

// backend is a service the gateway routes to; /readyz asks each one for its health.
type backend struct {
	name string
	conn *grpc.ClientConn
}

// New dials the services, fetches the JWKS (failing when it cannot), opens and migrates its
// schema and builds the handler.
// Dialing is lazy: a service that is down answers 503 per request and fails /readyz.
func New(ctx context.Context, cfg Config) (*Gateway, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("gateway: config: %w", err)
	}
	ropts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("gateway: CHORUS_REDIS_URL: %w", err)
	}
	g := &Gateway{cfg: cfg, log: cfg.Logger}
	ok := false
	defer func() {
		if !ok {
			g.Close()
		}
	}()

	// The key set refreshes in the background until Close, whatever happens to ctx.
	jwksCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	g.stopJWKS = stop
	auth, err := newAuthenticator(jwksCtx, cfg, g.log)
	if err != nil {
		return nil, err
	}

	conns, err := g.dial()
	if err != nil {
		return nil, err
	}

	subOpts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("gateway: CHORUS_REDIS_URL: %w", err)
	}
	g.rdb = redis.NewClient(rateLimitRedisOptions(ropts))
	g.subRDB = redis.NewClient(subOpts)
	metrics := newMetrics()
	limiter := newRateLimiter(g.rdb, cfg.RateLimit, cfg.RateBurst, metrics, g.log)
	limiter.startDecisions(jwksCtx)
	accessCache := orgsclient.NewAccessCache(orgsclient.New(conns[registry.Orgs.Name]), g.subRDB, g.log)
	go accessCache.Run(jwksCtx)
	access := &accessChecker{orgs: accessCache}
	if g.pool, err = pgdb.Open(ctx, cfg.DatabaseURL, Schema, pgdb.WithMaxConns(dbMaxConns)); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if err := pgdb.Migrate(ctx, g.pool, Schema, migrations.FS); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// A request holds its key for its deadline and a margin for storing the answer.
	keys := &idempotencyStore{rdb: g.subRDB, pool: g.pool, hold: cfg.RequestTimeout + 2*finishTimeout}
	go keys.sweep(jwksCtx, g.log)
	api, err := newAPIMux(ctx, backendConns{
		contacts: conns[registry.Contacts.Name].ClientConn(), orgs: conns[registry.Orgs.Name].ClientConn(), billing: conns[registry.Billing.Name].ClientConn(),
		messaging: conns[registry.Messaging.Name].ClientConn(), campaigns: conns[registry.Campaigns.Name].ClientConn(),
		polls: conns[registry.Polls.Name].ClientConn(), analytics: conns[registry.Analytics.Name].ClientConn(),
		webhooks: conns[registry.Webhooks.Name].ClientConn(),
	}, &idempotency{store: keys, log: g.log}, g.log)
	if err != nil {
		return nil, err
	}
	var public *publicRoutes
	if messaging := conns[registry.Messaging.Name]; messaging != nil {
		public = &publicRoutes{messaging: messagingclient.New(messaging), log: g.log}
	}
	g.handler = g.routes(api, public, auth, access, limiter, metrics)
	ok = true
	return g, nil
}

// dial makes lazy client connections, by registry name, to the backend services that have an
// address and registers them for /readyz, in the registry's order.
func (g *Gateway) dial() (map[string]*clients.Conn, error) {
	conns, err := clients.DialNeeds(registry.Gateway, g.cfg.Peers)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	for _, name := range registry.Gateway.Needs {
		if conn := conns[name]; conn != nil {
			// Each request already carries CHORUS_HTTP_REQUEST_TIMEOUT; a shorter per-attempt
			// deadline would cut a slow webhook off at the client's default and have the carrier
			// redeliver it.
			conn.Timeout = g.cfg.RequestTimeout
			g.backends = append(g.backends, backend{name: name, conn: conn.ClientConn()})
		}
	}
	return conns, nil
}

// Handler is the whole HTTP surface: /api/**, /webhooks/**, /l/*, /healthz, /readyz, /metrics,
// /openapi.json.
func (g *Gateway) Handler() http.Handler { return g.handler }

// Serve answers HTTP on lis until ctx is done, then lets in-flight requests finish (up to a
// grace period) before returning.
func (g *Gateway) Serve(ctx context.Context, lis net.Listener) error {
	srv := &http.Server{
		Handler:           g.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute, // bodies are at most MaxBodyBytes; a trickled one is cut off
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
	drained := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(drained)
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			g.log.Warn("gateway shutdown cut in-flight requests", "err", err)
			_ = srv.Close()
		}
	})
	err := srv.Serve(lis)
	if errors.Is(err, http.ErrServerClosed) {
		// Serve returns as soon as Shutdown starts; wait for in-flight requests.
		<-drained
		return nil
	}
	stop()
	return fmt.Errorf("gateway: serve: %w", err)
}

// Close stops the key refresh, the change subscription and the key sweep and releases the
// gRPC, Redis and PostgreSQL connections.
func (g *Gateway) Close() {
	if g.stopJWKS != nil {
		g.stopJWKS()
	}
	for _, b := range g.backends {
		_ = b.conn.Close()
	}
	g.backends = nil
	if g.rdb != nil {
		_ = g.rdb.Close()
		g.rdb = nil
	}
	if g.subRDB != nil {
		_ = g.subRDB.Close()
		g.subRDB = nil
	}
	if g.pool != nil {
		g.pool.Close()
		g.pool = nil
	}
}
