package service

import (
	"cmp"
	"io/fs"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/pgdb"
)

// Storage is where a service keeps its state, as the environment gives it. Every service's
// Config embeds it and reads it with StorageFromEnv, so the variables, their development
// defaults and their checks are written once.
type Storage struct {
	DatabaseURL string // CHORUS_DATABASE_URL
	RedisURL    string // CHORUS_REDIS_URL; empty: the service uses no Redis
	DBMaxConns  int    // CHORUS_DB_MAX_CONNS; 0 means the Layout's DefaultConns
}

// Layout is what a service owns in PostgreSQL and what it asks of its storage: fixed by the
// service, where Storage is given by the environment.
type Layout struct {
	Schema     string // the PostgreSQL schema the service owns
	Migrations fs.FS
	With       []pgdb.MigrateOption
	// Redis is set when the service reads or writes streams (or keeps counters) in Redis:
	// only then is CHORUS_REDIS_URL read, so a Deployment without Redis is not given it.
	Redis bool
	// DefaultConns bounds the pool when CHORUS_DB_MAX_CONNS is not set, or DBMaxConns is 0.
	DefaultConns int
	// MinConns is the smallest CHORUS_DB_MAX_CONNS accepted; 0 means pgdb.MinConns.
	MinConns int
}

// StorageFromEnv reads CHORUS_DATABASE_URL (a credential; its default is PostgreSQL on this
// machine), CHORUS_REDIS_URL when the layout uses Redis (default Redis on this machine), and
// CHORUS_DB_MAX_CONNS (default and least from the layout).
func StorageFromEnv(r *envconfig.Reader, l Layout) Storage {
	s := Storage{DatabaseURL: r.Secret("CHORUS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/chorus?sslmode=disable")}
	if l.Redis {
		s.RedisURL = r.URL("CHORUS_REDIS_URL", "redis://127.0.0.1:6379/0")
	}
	s.DBMaxConns = r.Int("CHORUS_DB_MAX_CONNS", l.DefaultConns, cmp.Or(l.MinConns, pgdb.MinConns))
	return s
}

// maxConns is the pool's bound: DBMaxConns, else the layout's default.
func (c Config) maxConns() int { return cmp.Or(c.DBMaxConns, c.DefaultConns) }
