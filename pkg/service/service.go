// Package service is the lifecycle every Chorus service shares: open its pool (and Redis when
// it reads or writes streams), migrate its schema, dial the services its registry row needs
// (at the addresses process.Wiring carries), start its background work and run it beside its
// gRPC server, answer readiness, and release what it holds in reverse order. Each service keeps
// its own New and delegates the rest here (its Service embeds Server), so errors keep the
// service's name as their prefix.
package service

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
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

// Config is what Open needs to reach and migrate a service's storage and to dial its peers.
type Config struct {
	// Service is the registry row: its Name prefixes errors, its Needs are the peers dialed.
	Service registry.Service
	// Wiring is where those peers answer, and the logger (where OnStop reports work that did
	// not stop in time).
	process.Wiring
	DatabaseURL string
	Schema      string
	MaxConns    int
	RedisURL    string // empty: the service uses no Redis
	Migrations  fs.FS
	With        []pgdb.MigrateOption
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
	pool, err := pgdb.Open(ctx, cfg.DatabaseURL, cfg.Schema, pgdb.WithMaxConns(cfg.MaxConns))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &Shell{Name: name, Pool: pool, Log: cmp.Or(cfg.Logger, slog.Default())}
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
	return s, nil
}

// OnClose adds f to what Close runs. Closers run in reverse order of registration, after the
// gRPC server stops and before the pool and Redis close, so work that still needs the pool
// (River, consumers) stops while it is open.
func (s *Shell) OnClose(f func()) { s.closers = append(s.closers, f) }

// OnStop adds a bounded stop of running work (River jobs, a dispatcher) to what Close runs:
// it gets timeout, the registry's Drain, to let that work finish while the pool is still open.
func (s *Shell) OnStop(what string, timeout time.Duration, stop func(context.Context) error) {
	s.OnClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := stop(ctx); err != nil {
			s.Log.Warn(s.Name+": "+what+" did not stop cleanly", "err", err)
		}
	})
}

// OnStart adds work Serve starts before it answers gRPC, in order of registration: a River
// client starting its jobs, a dispatcher. Stopping it is OnStop's.
func (s *Shell) OnStart(start func(context.Context) error) { s.starts = append(s.starts, start) }

// Run adds background work Serve runs beside the gRPC server until ctx is done: event
// consumers, outbox relays, folds.
func (s *Shell) Run(runners ...func(context.Context) error) {
	s.runners = append(s.runners, runners...)
}

// Serve starts the OnStart work, then answers gRPC on lis and runs the background runners
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

// CloseOnError closes the shell when *err is set: deferred by a service's New, it releases
// what Open and New built when a later step fails.
func (s *Shell) CloseOnError(err *error) {
	if *err != nil {
		s.Close()
	}
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
// and Close. Each service's own Service type embeds it.
type Server struct{ shell *Shell }

// Server is the shell as a built service.
func (s *Shell) Server() Server { return Server{s} }

// Serve starts the service's work and answers gRPC on lis until ctx is done (Shell.Serve).
func (s Server) Serve(ctx context.Context, lis net.Listener) error { return s.shell.Serve(ctx, lis) }

// Ready reports whether the service's database answers (the ops /readyz endpoint).
func (s Server) Ready(ctx context.Context) error { return s.shell.Ready(ctx) }

// Close stops the gRPC server, lets running work finish (bounded), and releases connections.
func (s Server) Close() { s.shell.Close() }

// Closes adds a client's Close to what Close runs (see OnClose).
func (s *Shell) Closes(c io.Closer) { s.OnClose(func() { _ = c.Close() }) }
