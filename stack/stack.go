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
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chorus-sms/chorus/pkg/devauth"
	"github.com/chorus-sms/chorus/pkg/registry"
)

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
