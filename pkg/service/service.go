// Package service is the lifecycle every Chorus service shares: open its pool (and Redis when
// it reads or writes streams), migrate its schema, run its gRPC server beside its background
// work, answer readiness, and release what it holds in reverse order. Each service keeps its
// own New, Serve, Ready and Close and delegates the common part here, so errors keep the
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
	"github.com/chorus-sms/chorus/pkg/rpcserver"
)

// Config is what Open needs to reach and migrate a service's storage.
type Config struct {
	Name        string // error prefix, e.g. "analytics"
	DatabaseURL string
	Schema      string
	MaxConns    int
	RedisURL    string // empty: the service uses no Redis
	Migrations  fs.FS
	With        []pgdb.MigrateOption
	Logger      *slog.Logger // where OnStop reports work that did not stop in time
}

// Shell holds a service's pool, optional Redis client and gRPC server, and what to release
// on Close.
type Shell struct {
	Name    string
	Pool    *pgxpool.Pool
	Redis   *redis.Client // nil when Config.RedisURL was empty
	GRPC    *grpc.Server  // set by the service once built; Close stops it first
	log     *slog.Logger
	closers []func()
}

// Open parses the Redis URL before connecting (a bad URL fails without touching the
// database), opens the pool, and migrates. On error nothing is left open.
func Open(ctx context.Context, cfg Config) (*Shell, error) {
	var ropts *redis.Options
	if cfg.RedisURL != "" {
		var err error
		if ropts, err = redis.ParseURL(cfg.RedisURL); err != nil {
			return nil, fmt.Errorf("%s: CHORUS_REDIS_URL: %w", cfg.Name, err)
		}
	}
	pool, err := pgdb.Open(ctx, cfg.DatabaseURL, cfg.Schema, pgdb.WithMaxConns(cfg.MaxConns))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Name, err)
	}
	s := &Shell{Name: cfg.Name, Pool: pool, log: cmp.Or(cfg.Logger, slog.Default())}
	if ropts != nil {
		s.Redis = redis.NewClient(ropts)
	}
	if err := pgdb.Migrate(ctx, pool, cfg.Schema, cfg.Migrations, cfg.With...); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: %w", cfg.Name, err)
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
			s.log.Warn(s.Name+": "+what+" did not stop cleanly", "err", err)
		}
	})
}

// Serve answers gRPC on lis and runs the background runners until ctx is done or one fails;
// errors carry the service's name.
func (s *Shell) Serve(ctx context.Context, lis net.Listener, runners ...func(context.Context) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, run := range runners {
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

// Closes adds a client's Close to what Close runs (see OnClose).
func (s *Shell) Closes(c io.Closer) { s.OnClose(func() { _ = c.Close() }) }
