package service_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/service"
)

// Unset, the storage is PostgreSQL and Redis on this machine and the layout's pool; a service
// without Redis does not read CHORUS_REDIS_URL, so its Deployment is not given it.
func TestStorageFromEnvDefaults(t *testing.T) {
	r := envconfig.FromMap(nil)
	got := service.StorageFromEnv(r, service.Layout{Redis: true, DefaultConns: 12})
	want := service.Storage{
		DatabaseURL: "postgres://postgres@127.0.0.1:5432/chorus?sslmode=disable", RedisURL: "redis://127.0.0.1:6379/0", DBMaxConns: 12,
	}
	if got != want || r.Err() != nil {
		t.Fatalf("StorageFromEnv = %+v (%v), want %+v", got, r.Err(), want)
	}
	r = envconfig.FromMap(nil)
	if got := service.StorageFromEnv(r, service.Layout{DefaultConns: 4}); got.RedisURL != "" {
		t.Fatalf("RedisURL = %q without Redis in the layout", got.RedisURL)
	}
	var names []string
	for _, v := range r.Vars() {
		names = append(names, v.Name)
		if v.Name == "CHORUS_DATABASE_URL" && !v.Secret {
			t.Error("CHORUS_DATABASE_URL is not read as a credential")
		}
	}
	if want := []string{"CHORUS_DATABASE_URL", "CHORUS_DB_MAX_CONNS"}; !slices.Equal(names, want) {
		t.Fatalf("read %v, want %v", names, want)
	}
}

// A pool below the layout's least (pgdb.MinConns unless it says more) and a bad Redis URL are
// named at start.
func TestStorageFromEnvChecks(t *testing.T) {
	for _, tc := range []struct {
		env    map[string]string
		layout service.Layout
		bad    string
	}{
		{map[string]string{"CHORUS_DB_MAX_CONNS": "1"}, service.Layout{DefaultConns: 4}, "CHORUS_DB_MAX_CONNS"},
		{map[string]string{"CHORUS_DB_MAX_CONNS": "2"}, service.Layout{DefaultConns: 16, MinConns: 3}, "CHORUS_DB_MAX_CONNS"},
		{map[string]string{"CHORUS_REDIS_URL": "not a url"}, service.Layout{Redis: true, DefaultConns: 4}, "CHORUS_REDIS_URL"},
	} {
		r := envconfig.FromMap(tc.env)
		service.StorageFromEnv(r, tc.layout)
		if err := r.Err(); err == nil || !strings.Contains(err.Error(), tc.bad) {
			t.Errorf("%v: err = %v, want one naming %s", tc.env, err, tc.bad)
		}
	}
	r := envconfig.FromMap(map[string]string{"CHORUS_DB_MAX_CONNS": "3", "CHORUS_DATABASE_URL": "postgres://db/x"})
	if got := service.StorageFromEnv(r, service.Layout{DefaultConns: 16, MinConns: 3}); got.DBMaxConns != 3 || got.DatabaseURL != "postgres://db/x" || r.Err() != nil {
		t.Fatalf("StorageFromEnv = %+v (%v)", got, r.Err())
	}
}
