package service_test

import (
	"context"
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

// A bad Redis URL fails before the database is touched, under the service's name.
func TestOpenBadRedisURL(t *testing.T) {
	_, err := service.Open(context.Background(), service.Config{Service: registry.Service{Name: "demo"}, RedisURL: "nope://x", DatabaseURL: "postgres://invalid"})
	if err == nil || !strings.HasPrefix(err.Error(), "demo: CHORUS_REDIS_URL: ") {
		t.Fatalf("err = %v, want the demo: CHORUS_REDIS_URL prefix", err)
	}
}

// Closers run newest first, before the pool closes: a stop registered last still has the pool.
func TestCloseOrder(t *testing.T) {
	ctx := context.Background()
	sh, err := service.Open(ctx, service.Config{
		Service: registry.Service{Name: "demo"}, DatabaseURL: pgtest.NewDatabase(t), Schema: "demo", MaxConns: 4,
		Migrations: fstest.MapFS{"00001_init.sql": {Data: []byte("-- +goose Up\nCREATE TABLE t (id int);\n")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	var order []string
	sh.OnClose(func() { order = append(order, "client") })
	sh.OnStop("jobs", time.Second, func(ctx context.Context) error {
		order = append(order, "jobs")
		if err := sh.Pool.Ping(ctx); err != nil {
			t.Errorf("the pool was closed before the stop: %v", err)
		}
		return nil
	})
	sh.Close()
	if want := []string{"jobs", "client"}; !slices.Equal(order, want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
	if err := sh.Ready(ctx); err == nil || !strings.HasPrefix(err.Error(), "demo: database: ") {
		t.Fatalf("Ready after Close = %v, want a demo: database error", err)
	}
}
