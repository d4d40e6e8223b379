// Package service is the lifecycle every Chorus service shares: read where its storage is
// (StorageFromEnv), open its pool (and Redis when it reads or writes streams), migrate its
// schema, dial the services its registry row needs (at the addresses process.Wiring carries),
// start its background work and run it beside its gRPC server, answer readiness, and release
// what it holds in reverse order. Each service declares its Def (registry row and Layout) and
// keeps its own New, which hands Def.Build what it adds to the shell and returns the Server,
// delegating the rest here, so errors keep the service's name as their prefix.
package service

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
)

// Config is what Open needs to reach and migrate a service's storage and to dial its peers:
// a service's New fills it from its own Config (which embeds Wiring and Storage) and Layout.
type Config struct {
	// Service is the registry row: its Name prefixes errors, its Needs are the peers dialed,
	// its Drain bounds each stop that Starts registers.
	Service registry.Service
	// Wiring is where those peers answer, and the logger (where Close reports work that did
	// not stop in time).
	process.Wiring
	Storage
	Layout
}

// Shell holds a service's pool, optional Redis client, peers and gRPC server, and what to
// release on Close.
type Shell struct {
	Name  string
	Pool  *pgxpool.Pool
	Redis *redis.Client // nil when Config.RedisURL was empty
	Peers Peers         // the clients of the registry row's Needs
	GRPC  *grpc.Server  // set by the service once built; Close stops it first
	// Log is the service's logger: Config.Logger, else slog.Default.
	Log     *slog.Logger
	drain   time.Duration
	starts  []func(context.Context) error
	runners []func(context.Context) error
	closers []func()
}

// Open parses the Redis URL before connecting (a bad URL fails without touching the
// database), opens the pool, migrates, and dials the peers. On error nothing is left open.
func Open(ctx context.Context, cfg Config) (*Shell, error) {
	name := cfg.Service.Name
	var ropts *redis.Options
	if cfg.RedisURL != "" {
		var err error
		if ropts, err = redis.ParseURL(cfg.RedisURL); err != nil {
			return nil, fmt.Errorf("%s: CHORUS_REDIS_URL: %w", name, err)
		}
	}
	pool, err := pgdb.Open(ctx, cfg.DatabaseURL, cfg.Schema, pgdb.WithMaxConns(cfg.maxConns()))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &Shell{Name: name, Pool: pool, Log: cmp.Or(cfg.Logger, slog.Default()), drain: cfg.Service.Drain}
	if ropts != nil {
		s.Redis = redis.NewClient(ropts)
	}
	if err := pgdb.Migrate(ctx, pool, cfg.Schema, cfg.Migrations, cfg.With...); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := s.dialPeers(cfg.Service, cfg.Peers); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if s.Peers.Orgs != nil && s.Redis != nil {
		// A settings change applies to the next message, not once the cached copy expires.
		s.Run(func(ctx context.Context) error { s.Peers.Orgs.Follow(ctx, s.Redis, s.Log); return nil })
	}
	return s, nil
}

// OnClose adds f to what Close runs. Closers run in reverse order of registration, after the
// gRPC server stops and before the pool and Redis close, so work that still needs the pool
// (River, consumers) stops while it is open.
func (s *Shell) OnClose(f func()) { s.closers = append(s.closers, f) }

// Worker is work that runs in the background between a start and a bounded stop: a River
// client working its jobs, the dispatcher.
type Worker interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Starts adds w to what Serve starts before it answers gRPC (in order of registration), and
// its stop to what Close runs: bounded by the registry row's Drain, it lets running work
// finish after the gRPC server stops and while the pool is still open. what names w in the
// warning logged when it does not stop cleanly.
func (s *Shell) Starts(what string, w Worker) {
	s.starts = append(s.starts, w.Start)
	s.OnClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.drain)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			s.Log.Warn(s.Name+": "+what+" did not stop cleanly", "err", err)
		}
	})
}

// Run adds background work Serve runs beside the gRPC server until ctx is done: event
// consumers, outbox relays, folds.
func (s *Shell) Run(runners ...func(context.Context) error) {
	s.runners = append(s.runners, runners...)
}

// Serve starts the Starts work, then answers gRPC on lis and runs the background runners
// until ctx is done or one fails; errors carry the service's name.
func (s *Shell) Serve(ctx context.Context, lis net.Listener) error {
	for _, start := range s.starts {
		if err := start(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, run := range s.runners {
		g.Go(func() error { return run(gctx) })
	}
	g.Go(func() error { return rpcserver.Serve(gctx, s.GRPC, lis) })
	if err := g.Wait(); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}

// Ready reports whether the service's database answers (the ops /readyz endpoint).
func (s *Shell) Ready(ctx context.Context) error {
	if err := s.Pool.Ping(ctx); err != nil {
		return fmt.Errorf("%s: database: %w", s.Name, err)
	}
	return nil
}

// Build opens the shell (Open) and lets build add the service's gRPC server and its work.
// When build fails, what Open and build acquired is released, and the error carries the
// service's name.
func Build(ctx context.Context, cfg Config, build func(*Shell) error) (Server, error) {
	sh, err := Open(ctx, cfg)
	if err != nil {
		return Server{}, err
	}
	if err := build(sh); err != nil {
		sh.Close()
		return Server{}, fmt.Errorf("%s: %w", sh.Name, err)
	}
	return Server{sh}, nil
}

// Close stops the gRPC server, runs the closers newest first, then closes the pool and Redis.
// It is safe on a partly built service (New's failure path).
func (s *Shell) Close() {
	if s.GRPC != nil {
		s.GRPC.Stop()
	}
	for _, f := range slices.Backward(s.closers) {
		f()
	}
	s.Pool.Close()
	if s.Redis != nil {
		_ = s.Redis.Close()
	}
}

// Server is a built service as process.Main and the stack run it: its shell's Serve, Ready
// and Close. Each service's New returns one.
type Server struct{ shell *Shell }

// Serve starts the service's work and answers gRPC on lis until ctx is done (Shell.Serve).
func (s Server) Serve(ctx context.Context, lis net.Listener) error { return s.shell.Serve(ctx, lis) }

// Ready reports whether the service's database answers (the ops /readyz endpoint).
func (s Server) Ready(ctx context.Context) error { return s.shell.Ready(ctx) }

// Close stops the gRPC server, lets running work finish (bounded), and releases connections.
func (s Server) Close() { s.shell.Close() }

// Closes adds a client's Close to what Close runs (see OnClose).
func (s *Shell) Closes(c io.Closer) { s.OnClose(func() { _ = c.Close() }) }
