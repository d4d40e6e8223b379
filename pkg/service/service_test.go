package service_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/service"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// demo is a layout with one table, migrated into a database of the test's own.
var demo = service.Layout{
	Schema:       "demo",
	Migrations:   fstest.MapFS{"00001_init.sql": {Data: []byte("-- +goose Up\nCREATE TABLE t (id int);\n")}},
	DefaultConns: 4,
}

// A bad Redis URL fails before the database is touched, under the service's name.
func TestOpenBadRedisURL(t *testing.T) {
	_, err := service.Open(context.Background(), service.Config{
		Service: registry.Service{Name: "demo"}, Storage: service.Storage{RedisURL: "nope://x", DatabaseURL: "postgres://invalid"},
	})
	if err == nil || !strings.HasPrefix(err.Error(), "demo: CHORUS_REDIS_URL: ") {
		t.Fatalf("err = %v, want the demo: CHORUS_REDIS_URL prefix", err)
	}
}

// worker records its start and stop; its stop checks the pool is still open.
type worker struct {
	sh    *service.Shell
	order *[]string
	t     *testing.T
}

func (w worker) Start(context.Context) error { *w.order = append(*w.order, "start"); return nil }

func (w worker) Stop(ctx context.Context) error {
	*w.order = append(*w.order, "jobs")
	if err := w.sh.Pool.Ping(ctx); err != nil {
		w.t.Errorf("the pool was closed before the stop: %v", err)
	}
	return nil
}

// Closers run newest first, before the pool closes: a stop registered last still has the pool.
func TestCloseOrder(t *testing.T) {
	ctx := context.Background()
	sh, err := service.Open(ctx, service.Config{
		Service: registry.Service{Name: "demo", Drain: time.Second}, Storage: service.Storage{DatabaseURL: pgtest.NewDatabase(t)}, Layout: demo,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	var order []string
	sh.OnClose(func() { order = append(order, "client") })
	sh.Starts("jobs", worker{sh: sh, order: &order, t: t})
	sh.Close()
	if want := []string{"jobs", "client"}; !slices.Equal(order, want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
	if err := sh.Ready(ctx); err == nil || !strings.HasPrefix(err.Error(), "demo: database: ") {
		t.Fatalf("Ready after Close = %v, want a demo: database error", err)
	}
}

// When the service's own part fails, Build releases what it added and what Open opened, and
// the error carries the service's name.
func TestBuildClosesOnError(t *testing.T) {
	var shell *service.Shell
	closed := false
	_, err := service.Build(context.Background(), service.Config{
		Service: registry.Service{Name: "demo"}, Storage: service.Storage{DatabaseURL: pgtest.NewDatabase(t)}, Layout: demo,
	}, func(sh *service.Shell) error {
		shell = sh
		sh.OnClose(func() { closed = true })
		return errors.New("no jobs")
	})
	if err == nil || err.Error() != "demo: no jobs" {
		t.Fatalf("err = %v, want demo: no jobs", err)
	}
	if !closed {
		t.Fatal("what build added was not closed")
	}
	if err := shell.Ready(context.Background()); err == nil {
		t.Fatal("the pool is still open")
	}
}
