package pgtest

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"
)

// buildTimeout bounds building one template (migrations of a whole stack on a busy machine).
const buildTimeout = 3 * time.Minute

var templateName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}$`)

// templates are the template databases this process built, for Close.
var templates struct {
	sync.Mutex
	names []string
}

// Template is a database built once per test process, on first use, that each test's database
// is cloned from (CREATE DATABASE ... TEMPLATE), so migrations run once instead of per test.
type Template struct {
	name  string
	build func(ctx context.Context, dsn string) error

	once sync.Once
	db   string
	err  error
}

// NewTemplate declares a template; build migrates the empty database at dsn, typically by
// starting and closing the service that owns the schema, and must leave no connection open.
// name (lowercase letters, digits, underscores) only makes the database easy to recognise.
func NewTemplate(name string, build func(ctx context.Context, dsn string) error) *Template {
	if !templateName.MatchString(name) {
		panic(fmt.Sprintf("pgtest: invalid template name %q", name))
	}
	return &Template{name: name, build: build}
}

// NewDatabase builds the template if this is its first use, then returns the DSN of a new copy
// of it; the copy is dropped at cleanup.
func (t *Template) NewDatabase(tb testing.TB) string {
	tb.Helper()
	t.once.Do(func() { t.db, t.err = t.create() })
	if t.err != nil {
		tb.Fatal(t.err)
	}
	return newDatabase(tb, t.db)
}

// create makes the template database, builds it, and closes it to connections: PostgreSQL
// refuses to copy a database anyone is connected to.
func (t *Template) create() (string, error) {
	owner, err := start()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	db := templatePrefix + owner + "_" + t.name
	if err := admin(ctx, "CREATE DATABASE "+db); err != nil {
		return "", fmt.Errorf("pgtest: template %s: %w", t.name, err)
	}
	templates.Lock()
	templates.names = append(templates.names, db)
	templates.Unlock()
	dsn, err := dsnOf(db)
	if err != nil {
		return "", err
	}
	if err := t.build(ctx, dsn); err != nil {
		return "", fmt.Errorf("pgtest: build template %s: %w", t.name, err)
	}
	// Refuse new connections first, then end any the build left behind.
	err = admin(ctx,
		"ALTER DATABASE "+db+" WITH ALLOW_CONNECTIONS false",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"+db+"' AND pid <> pg_backend_pid()")
	if err != nil {
		return "", fmt.Errorf("pgtest: template %s: %w", t.name, err)
	}
	return db, nil
}
