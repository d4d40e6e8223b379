package contacts_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/service"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, redistest.Close)
}

// env is a contacts service on a 127.0.0.1 listener over its own database and Redis database,
// a pool on that database for assertions the API cannot make (outbox rows, River jobs), and a
// client of the Redis database (the events stream).
type env struct {
	c   contactsv1.ContactsServiceClient
	db  *pgxpool.Pool
	rdb *redis.Client
}

// migrated is the schema every test's database starts with, migrated by the service itself.
var migrated = pgtest.NewTemplate("contacts", func(ctx context.Context, dsn string) error {
	svc, err := contacts.New(ctx, config(dsn, "redis://127.0.0.1:6379/0"))
	if err != nil {
		return err
	}
	svc.Close() // it never served: nothing was published to Redis
	return nil
})

func config(dsn, redisURL string) contacts.Config {
	return contacts.Config{
		Storage: service.Storage{DatabaseURL: dsn, RedisURL: redisURL}, CursorSecret: "test-secret", LookupProvider: "sandbox", LookupRate: 10000,
		Wiring: process.Wiring{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
	}
}

// start runs the service; edit may change the config (e.g. the lookup provider).
func start(t *testing.T, edit func(*contacts.Config)) *env {
	t.Helper()
	redisURL, rdb := redistest.New(t)
	e := startWith(t, migrated.NewDatabase(t), redisURL, edit)
	e.rdb = rdb
	return e
}

// startOn runs the service on an existing database and Redis database (a restart); its env
// has no Redis client.
func startOn(t *testing.T, dsn, redisURL string) *env {
	t.Helper()
	return startWith(t, dsn, redisURL, nil)
}

func startWith(t *testing.T, dsn, redisURL string, edit func(*contacts.Config)) *env {
	t.Helper()
	cfg := config(dsn, redisURL)
	if edit != nil {
		edit(&cfg)
	}
	svc, err := contacts.New(context.Background(), cfg)
	require.NoError(t, err)
	conn := servetest.Serve(t, svc)
	db, err := testPool(dsn)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return &env{c: contactsv1.NewContactsServiceClient(conn), db: db}
}

func testPool(dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = contacts.Schema
	return pgxpool.NewWithConfig(context.Background(), cfg)
}

// as returns a context calling for a new organization with the given access.
func as(access tenant.Access) context.Context {
	return asOrg(uuid.New(), access)
}

func asOrg(org uuid.UUID, access tenant.Access) context.Context {
	return tenant.AppendToOutgoing(context.Background(), tenant.Principal{OrgID: org, User: "user-" + org.String()[:8], Access: access})
}

// orgOf returns the organization a context calls for.
func orgOf(ctx context.Context) uuid.UUID {
	md, _ := metadata.FromOutgoingContext(ctx)
	return uuid.MustParse(md.Get(tenant.MDOrg)[0])
}

// create creates a contact and returns it with the status the service chose (httpcode.Set).
func create(t *testing.T, e *env, ctx context.Context, req *contactsv1.CreateContactRequest) (*contactsv1.CreatedContact, string) {
	t.Helper()
	var hdr metadata.MD
	res, err := e.c.CreateContact(ctx, req, grpc.Header(&hdr))
	require.NoError(t, err)
	code := ""
	if v := hdr.Get(httpcode.Header); len(v) == 1 {
		code = v[0]
	}
	return res.GetContact(), code
}

// badFields asserts err is a VALIDATION_FAILED error and returns the fields it names.
func badFields(t *testing.T, err error) []string {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	assert.Equal(t, apierr.ReasonValidation, apierr.Reason(err))
	var fields []string
	for f := range apierr.FieldViolations(err) {
		fields = append(fields, f)
	}
	return fields
}

// assertNotFound asserts err is the 404 every missing or foreign id gets.
func assertNotFound(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	assert.Equal(t, codes.NotFound, status.Code(err), msgAndArgs...)
	assert.Equal(t, apierr.ReasonNotFound, apierr.Reason(err), msgAndArgs...)
}

// eventually polls cond every 50ms until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func str(s string) *string { return &s }

func names(items []*contactsv1.ContactListItem) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.GetFirstName())
	}
	return out
}
