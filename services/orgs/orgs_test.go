package orgs_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/apierr"
	orgsclient "github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/service"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/orgs"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, redistest.Close)
}

// migrated is the schema every test's database starts with, migrated by the service itself.
var migrated = pgtest.NewTemplate("orgs", func(ctx context.Context, dsn string) error {
	svc, err := orgs.New(ctx, config(dsn, "redis://127.0.0.1:6379/0"))
	if err != nil {
		return err
	}
	svc.Close() // it never served: nothing was cached in Redis
	return nil
})

func config(dsn, redisURL string) orgs.Config {
	return orgs.Config{
		Storage: service.Storage{DatabaseURL: dsn, RedisURL: redisURL},
		Wiring:  process.Wiring{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
	}
}

// startOrgs runs the service on its own database and Redis database, and returns a client of
// it and of the Redis database (the access cache).
func startOrgs(t *testing.T) (orgsv1.OrgsServiceClient, *redis.Client) {
	t.Helper()
	redisURL, rdb := redistest.New(t)
	svc, err := orgs.New(context.Background(), config(migrated.NewDatabase(t), redisURL))
	require.NoError(t, err)
	conn := servetest.Serve(t, svc)
	return orgsv1.NewOrgsServiceClient(conn), rdb
}

func TestMembershipLifecycleIsVisibleImmediatelyAndAnnounced(t *testing.T) {
	t.Parallel()
	c, rdb := startOrgs(t)
	ctx := context.Background()
	created, err := c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "Acme", Timezone: "America/Chicago", Sandbox: true})
	require.NoError(t, err)
	org := created.GetOrganization()
	assert.Equal(t, "America/Chicago", org.GetTimezone())
	assert.True(t, org.GetSandbox())

	// The gateways' caches drop an answer on these messages.
	sub := rdb.Subscribe(ctx, orgsclient.AccessChannel)
	t.Cleanup(func() { _ = sub.Close() })
	_, err = sub.Receive(ctx) // the subscription is confirmed
	require.NoError(t, err)
	announced := func() {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		msg, err := sub.ReceiveMessage(rctx)
		require.NoError(t, err, "the change was not announced")
		assert.Equal(t, org.GetId()+":user-1", msg.Payload)
	}

	check := func() orgsv1.Access {
		res, err := c.CheckAccess(ctx, &orgsv1.CheckAccessRequest{OrganizationId: org.GetId(), UserSubject: "user-1"})
		require.NoError(t, err)
		return res.GetAccess()
	}
	assert.Equal(t, orgsv1.Access_ACCESS_UNSPECIFIED, check())
	_, err = c.SetMembership(ctx, &orgsv1.SetMembershipRequest{OrganizationId: org.GetId(), UserSubject: "user-1", Access: orgsv1.Access_ACCESS_READ})
	require.NoError(t, err)
	announced()
	assert.Equal(t, orgsv1.Access_ACCESS_READ, check())

	_, err = c.SetMembership(ctx, &orgsv1.SetMembershipRequest{OrganizationId: org.GetId(), UserSubject: "user-1", Access: orgsv1.Access_ACCESS_WRITE})
	require.NoError(t, err)
	announced()
	assert.Equal(t, orgsv1.Access_ACCESS_WRITE, check())

	_, err = c.RemoveMembership(ctx, &orgsv1.RemoveMembershipRequest{OrganizationId: org.GetId(), UserSubject: "user-1"})
	require.NoError(t, err)
	announced()
	assert.Equal(t, orgsv1.Access_ACCESS_UNSPECIFIED, check())
}

func TestMembershipIsPerOrganization(t *testing.T) {
	t.Parallel()
	c, _ := startOrgs(t)
	ctx := context.Background()
	a, err := c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "A"})
	require.NoError(t, err)
	b, err := c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "B"})
	require.NoError(t, err)
	_, err = c.SetMembership(ctx, &orgsv1.SetMembershipRequest{OrganizationId: a.GetOrganization().GetId(), UserSubject: "u", Access: orgsv1.Access_ACCESS_ADMIN})
	require.NoError(t, err)
	res, err := c.CheckAccess(ctx, &orgsv1.CheckAccessRequest{OrganizationId: b.GetOrganization().GetId(), UserSubject: "u"})
	require.NoError(t, err)
	assert.Equal(t, orgsv1.Access_ACCESS_UNSPECIFIED, res.GetAccess())
	assert.Equal(t, "America/New_York", a.GetOrganization().GetTimezone(), "default timezone")
}

func TestOrgsRejectsBadInput(t *testing.T) {
	t.Parallel()
	c, _ := startOrgs(t)
	ctx := context.Background()
	_, err := c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: " ", Timezone: "Mars/Base"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Equal(t, apierr.ReasonValidation, apierr.Reason(err))
	assert.Contains(t, err.Error(), "name")

	_, err = c.SetMembership(ctx, &orgsv1.SetMembershipRequest{OrganizationId: "0190d1f8-0000-7000-8000-000000000000", UserSubject: "u", Access: orgsv1.Access_ACCESS_READ})
	assert.Equal(t, codes.NotFound, status.Code(err), "membership of a missing organization")

	_, err = c.CheckAccess(ctx, &orgsv1.CheckAccessRequest{OrganizationId: "nope", UserSubject: "u"})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))

	_, err = c.GetOrganization(ctx, &orgsv1.GetOrganizationRequest{Id: "0190d1f8-0000-7000-8000-000000000000"})
	assert.Equal(t, codes.NotFound, status.Code(err))
}

func TestHelpTextIsStoredAndCappedAt320Characters(t *testing.T) {
	t.Parallel()
	c, _ := startOrgs(t)
	ctx := context.Background()
	// 320 characters of two bytes each: the cap counts characters, not bytes.
	help := strings.Repeat("é", 320)
	created, err := c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "Acme", HelpText: "  " + help + "\n"})
	require.NoError(t, err)
	assert.Equal(t, help, created.GetOrganization().GetHelpText(), "surrounding space is trimmed")
	got, err := c.GetOrganization(ctx, &orgsv1.GetOrganizationRequest{Id: created.GetOrganization().GetId()})
	require.NoError(t, err)
	assert.Equal(t, help, got.GetOrganization().GetHelpText())

	plain, err := c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "Plain"})
	require.NoError(t, err)
	got, err = c.GetOrganization(ctx, &orgsv1.GetOrganizationRequest{Id: plain.GetOrganization().GetId()})
	require.NoError(t, err)
	assert.Empty(t, got.GetOrganization().GetHelpText(), "no help text: the default answer applies")

	_, err = c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "Long", HelpText: help + "x"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Equal(t, apierr.ReasonValidation, apierr.Reason(err))
	assert.Contains(t, apierr.FieldViolations(err), "helpText")
}

func TestStateQuietHoursAreOnUnlessTurnedOff(t *testing.T) {
	t.Parallel()
	c, _ := startOrgs(t)
	ctx := context.Background()
	for _, off := range []bool{false, true} {
		created, err := c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "Acme", StateQuietHoursOff: off})
		require.NoError(t, err)
		got, err := c.GetOrganization(ctx, &orgsv1.GetOrganizationRequest{Id: created.GetOrganization().GetId()})
		require.NoError(t, err)
		assert.Equal(t, off, got.GetOrganization().GetStateQuietHoursOff())
	}
}

// Without Redis a membership change still succeeds and is effective at once here: orgs keeps
// no cache of its own, and the gateways' entries expire within a second unannounced.
func TestMembershipChangeWithoutRedisStillTakesEffect(t *testing.T) {
	t.Parallel()
	svc, err := orgs.New(context.Background(), config(migrated.NewDatabase(t), "redis://"+servetest.ClosedAddr(t)+"/0"))
	require.NoError(t, err)
	c := orgsv1.NewOrgsServiceClient(servetest.Serve(t, svc))
	ctx := context.Background()
	created, err := c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "Acme"})
	require.NoError(t, err)
	org := created.GetOrganization().GetId()

	_, err = c.SetMembership(ctx, &orgsv1.SetMembershipRequest{OrganizationId: org, UserSubject: "u", Access: orgsv1.Access_ACCESS_WRITE})
	require.NoError(t, err)
	res, err := c.CheckAccess(ctx, &orgsv1.CheckAccessRequest{OrganizationId: org, UserSubject: "u"})
	require.NoError(t, err)
	assert.Equal(t, orgsv1.Access_ACCESS_WRITE, res.GetAccess())

	_, err = c.RemoveMembership(ctx, &orgsv1.RemoveMembershipRequest{OrganizationId: org, UserSubject: "u"})
	require.NoError(t, err)
	res, err = c.CheckAccess(ctx, &orgsv1.CheckAccessRequest{OrganizationId: org, UserSubject: "u"})
	require.NoError(t, err)
	assert.Equal(t, orgsv1.Access_ACCESS_UNSPECIFIED, res.GetAccess())
}
