// Package stack runs every Chorus service and the REST gateway in one process, each on its own
// loopback listener and talking to the others over real gRPC, exactly as the Deployments do in
// Kubernetes. `make run` and the e2e tests use it; production runs one binary per service.
package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/devauth"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/analytics"
	"github.com/chorus-sms/chorus/services/billing"
	"github.com/chorus-sms/chorus/services/campaigns"
	"github.com/chorus-sms/chorus/services/contacts"
	"github.com/chorus-sms/chorus/services/messaging"
	"github.com/chorus-sms/chorus/services/orgs"
	"github.com/chorus-sms/chorus/services/polls"
	"github.com/chorus-sms/chorus/services/webhooks"
)

// Config is the whole stack's configuration, read from the same CHORUS_* variables the
// separate binaries read.
type Config struct {
	Orgs      orgs.Config
	Contacts  contacts.Config
	Billing   billing.Config
	Messaging messaging.Config
	Campaigns campaigns.Config
	Polls     polls.Config
	Analytics analytics.Config
	Webhooks  webhooks.Config
	Gateway   gateway.Config
	// Addrs is where each registry service listens, by name, from its AddrVar (port 0 picks a
	// free port). Each service's peers (its Config's Peers) are set from the actual
	// listeners.
	Addrs map[string]string
	// Services names the registry services this process runs (CHORUS_STACK_SERVICES, comma
	// separated); empty runs them all. The others are reached at their Addrs, served by other
	// processes, as in Kubernetes: the fault tests run campaigns and messaging in processes
	// they kill while the rest stays up.
	Services []string
	// DevKeyPath is the PEM key of the local identity provider (CHORUS_DEV_KEY).
	DevKeyPath string
	// JWKSAddr is where the local identity provider publishes its JWKS (CHORUS_DEV_JWKS_ADDR).
	JWKSAddr string
	// DevIdentity points the gateway at the local identity provider; it is true when
	// CHORUS_JWT_JWKS_URL is unset.
	DevIdentity bool
	// LocalPublicURL makes the gateway's own listener the public URL messaging signs webhooks
	// and builds links with; it is true when CHORUS_PUBLIC_URL is unset.
	LocalPublicURL bool
	Logger         *slog.Logger
}

// ConfigFromEnv reads every service's variables. The gateway is pointed at the local identity
// provider unless CHORUS_JWT_JWKS_URL names another one.
func ConfigFromEnv(r *envconfig.Reader) Config {
	c := Config{
		Orgs:           orgs.ConfigFromEnv(r),
		Contacts:       contacts.ConfigFromEnv(r),
		Billing:        billing.ConfigFromEnv(r),
		Messaging:      messaging.ConfigFromEnv(r),
		Campaigns:      campaigns.ConfigFromEnv(r),
		Polls:          polls.ConfigFromEnv(r),
		Analytics:      analytics.ConfigFromEnv(r),
		Webhooks:       webhooks.ConfigFromEnv(r),
		DevKeyPath:     r.String("CHORUS_DEV_KEY", ".run/dev-key.pem"),
		JWKSAddr:       r.String("CHORUS_DEV_JWKS_ADDR", "127.0.0.1:8090"),
		DevIdentity:    r.String("CHORUS_JWT_JWKS_URL", "") == "",
		LocalPublicURL: r.String("CHORUS_PUBLIC_URL", "") == "",
		Addrs:          make(map[string]string, len(registry.All)),
	}
	for _, svc := range registry.All {
		c.Addrs[svc.Name] = svc.AddrFrom(r)
	}
	names := make([]string, len(registry.All))
	for i, svc := range registry.All {
		names[i] = svc.Name
	}
	c.Services = r.SomeOf("CHORUS_STACK_SERVICES", names...)
	if c.DevIdentity {
		r = r.WithDefaults(map[string]string{
			"CHORUS_JWT_JWKS_URL": jwksURL(c.JWKSAddr),
			"CHORUS_JWT_ISSUER":   devauth.Issuer,
			"CHORUS_JWT_AUDIENCE": devauth.Audience,
		})
	}
	c.Gateway = gateway.ConfigFromEnv(r)
	return c
}

// runs says whether this process runs svc.
func (c *Config) runs(svc registry.Service) bool {
	return len(c.Services) == 0 || slices.Contains(c.Services, svc.Name)
}

func jwksURL(addr string) string { return "http://" + addr + "/.well-known/jwks.json" }

// Stack is a running set of services.
type Stack struct {
	// HTTPURL is the gateway's base URL, e.g. http://127.0.0.1:8080.
	HTTPURL string
	// PublicURL is the base URL carriers and link clicks reach the gateway at: HTTPURL unless
	// CHORUS_PUBLIC_URL names another.
	PublicURL string
	// Key signs access tokens the gateway accepts (nil unless the stack is its own identity
	// provider).
	Key *devauth.Key

	addrs  map[string]string // by registry name: where each service actually listens
	cancel context.CancelFunc
	group  *errgroup.Group
	closes []func()
}

// Addr is where svc listens, e.g. st.Addr(registry.Orgs): chorusctl and tests create orgs,
// grant credits and add sending numbers through the internal services.
func (s *Stack) Addr(svc registry.Service) string { return s.addrs[svc.Name] }

// Start starts every registry service of cfg.Services (all by default) in the registry's order,
// each given the addresses of the services it needs, and returns once all of them accept
// connections. Stop it with Close.
// Every listener is taken first, so messaging is given the gateway's URL as the public URL it
// signs webhooks and builds links with before the gateway is built.
func Start(ctx context.Context, cfg Config) (st *Stack, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(ctx)
	s := &Stack{cancel: cancel, group: g, addrs: make(map[string]string, len(registry.All))}
	st = s
	defer func() {
		if err != nil {
			s.Close() // st is nil by now
		}
	}()

	if cfg.DevIdentity && cfg.runs(registry.Gateway) {
		if err := st.serveDevIdentity(gctx, &cfg); err != nil {
			return nil, err
		}
	}

	listeners := make(map[string]net.Listener, len(registry.All))
	for _, svc := range registry.All {
		if !cfg.runs(svc) { // served by another process, where callers reach it
			st.addrs[svc.Name] = cfg.Addrs[svc.Name]
			continue
		}
		if cfg.Addrs[svc.Name] == "" { // net.Listen would take a port on every interface
			return nil, fmt.Errorf("stack: no address for %s (Config.Addrs comes from ConfigFromEnv)", svc.Name)
		}
		lis, err := net.Listen("tcp", cfg.Addrs[svc.Name])
		if err != nil {
			return nil, fmt.Errorf("stack: %s listen %s: %w", svc.Name, cfg.Addrs[svc.Name], err)
		}
		st.closes = append(st.closes, func() { _ = lis.Close() }) // until the service serves on it
		listeners[svc.Name] = lis
		st.addrs[svc.Name] = lis.Addr().String()
	}
	st.HTTPURL = "http://" + st.Addr(registry.Gateway)
	if cfg.LocalPublicURL {
		cfg.Messaging.PublicURL = st.HTTPURL
	}
	st.PublicURL = cfg.Messaging.PublicURL

	for _, svc := range registry.All {
		if !cfg.runs(svc) {
			continue
		}
		peers := make(registry.Peers, len(svc.Needs))
		for _, need := range svc.Needs {
			peers[need] = st.addrs[need]
		}
		srv, err := constructors[svc.Name](ctx, &cfg, peers, log.With("service", svc.Name))
		if err != nil {
			return nil, fmt.Errorf("stack: start %s: %w", svc.Name, err)
		}
		st.closes = append(st.closes, srv.Close)
		lis := listeners[svc.Name]
		g.Go(func() error { return srv.Serve(gctx, lis) })
	}
	return st, nil
}

// serveDevIdentity publishes the dev key's JWKS and points the gateway at it.
func (s *Stack) serveDevIdentity(ctx context.Context, cfg *Config) error {
	key, err := devauth.LoadOrCreate(cfg.DevKeyPath)
	if err != nil {
		return err
	}
	s.Key = key
	lis, err := net.Listen("tcp", cfg.JWKSAddr)
	if err != nil {
		return fmt.Errorf("stack: dev JWKS listen %s: %w", cfg.JWKSAddr, err)
	}
	srv := &http.Server{Handler: key.Handler(), ReadHeaderTimeout: 5 * time.Second}
	s.group.Go(func() error { return serveHTTP(ctx, srv, lis) })
	cfg.Gateway.JWKSURL = jwksURL(lis.Addr().String())
	return nil
}

// Wait blocks until the stack stops (its context ends or a service fails) and returns the
// first failure.
func (s *Stack) Wait() error {
	err := s.group.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Close stops every service and releases their connections.
func (s *Stack) Close() {
	s.cancel()
	_ = s.group.Wait()
	for i := len(s.closes) - 1; i >= 0; i-- {
		s.closes[i]()
	}
	s.closes = nil
}

func serveHTTP(ctx context.Context, srv *http.Server, lis net.Listener) error {
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	defer stop()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stack: serve %s: %w", lis.Addr(), err)
	}
	return nil
}
