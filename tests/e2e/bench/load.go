package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// throughput runs f from conns goroutines at once for d (after a warm-up of a tenth of d) and
// returns completed calls per second. The first error stops every worker.
func throughput(ctx context.Context, conns int, d time.Duration, f func(ctx context.Context) error) (float64, error) {
	run := func(d time.Duration) (int64, time.Duration, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var done atomic.Int64
		var once sync.Once
		var firstErr error
		var wg sync.WaitGroup
		start := time.Now()
		deadline := start.Add(d)
		for range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					if err := f(ctx); err != nil {
						once.Do(func() { firstErr = err; cancel() })
						return
					}
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		return done.Load(), time.Since(start), firstErr
	}
	if _, _, err := run(d / 10); err != nil {
		return 0, err
	}
	n, elapsed, err := run(d)
	if err != nil {
		return 0, err
	}
	return float64(n) / elapsed.Seconds(), nil
}

// benchConcurrent is the concurrent case: list page 1 from conns keep-alive HTTP connections
// through the gateway against the same SQL from conns pooled pgx connections, each for d.
func benchConcurrent(ctx context.Context, c *apiClient, dsn string, conns int, d time.Duration, sql string, args []any) error {
	cfg, err := pgxpool.ParseConfig(dsn + "&search_path=contacts,public")
	if err != nil {
		return err
	}
	cfg.MaxConns, cfg.MinConns = int32(conns), int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	lc := *c
	lc.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
	// The sides take turns in loadRounds slices, so a machine busy with other work for a
	// while slows both rather than one.
	var gw, raw float64
	for range loadRounds {
		g, err := throughput(ctx, conns, d/loadRounds, func(ctx context.Context) error { return lc.get(ctx, "/api/contacts?limit=50") })
		if err != nil {
			return fmt.Errorf("concurrent list via gateway: %w", err)
		}
		r, err := throughput(ctx, conns, d/loadRounds, func(ctx context.Context) error { return rawQuery(ctx, pool, sql, args) })
		if err != nil {
			return fmt.Errorf("concurrent list raw: %w", err)
		}
		gw, raw = gw+g/loadRounds, raw+r/loadRounds
	}
	fmt.Printf("\nlist page 1 at %d concurrent connections, %s a side in %d alternating slices: gateway %.0f req/s, raw pgx %.0f query/s, ratio %.3f (target >= 0.35)\n",
		conns, d, loadRounds, gw, raw, gw/raw)
	return nil
}

// loadRounds is how many turns each side of the concurrent case takes.
const loadRounds = 5
