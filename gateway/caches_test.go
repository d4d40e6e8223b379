package gateway_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/gateway"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// refusedWithin polls r on each gateway until it answers want, failing if that takes a second.
func refusedWithin(t *testing.T, urls []string, r request, want int) {
	t.Helper()
	start := time.Now()
	for _, u := range urls {
		for {
			res := doHTTP(t, u, r)
			if res.status == want {
				break
			}
			require.Less(t, res.status, 300, "%s", res.body)
			require.Less(t, time.Since(start), time.Second, "%s still serves the request after the change", u)
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// warm sends r to each gateway a few times, so their in-process caches hold the answer.
func warm(t *testing.T, urls []string, r request) {
	t.Helper()
	for range 5 {
		for _, u := range urls {
			res := doHTTP(t, u, r)
			require.Less(t, res.status, 300, "%s", res.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMembershipChangesReachEveryGatewayWithinASecond(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	urls := []string{e.url, serveGateway(t, e.cfg)}
	org := e.member("user-1", "write")
	tok := e.token("user-1")
	write := request{method: http.MethodPost, path: "/api/contacts", token: tok, org: org}
	read := request{method: http.MethodGet, path: "/api/contacts", token: tok, org: org}
	warm(t, urls, write)
	warm(t, urls, read)

	e.grant(org, "user-1", "read")
	refusedWithin(t, urls, write, http.StatusForbidden)

	_, err := e.orgs.RemoveMembership(context.Background(), &orgsv1.RemoveMembershipRequest{OrganizationId: org, UserSubject: "user-1"})
	require.NoError(t, err)
	refusedWithin(t, urls, read, http.StatusForbidden)

	e.grant(org, "user-1", "read")
	for _, u := range urls {
		require.Eventually(t, func() bool { return doHTTP(t, u, read).status == http.StatusOK }, time.Second, 20*time.Millisecond,
			"a new grant is honoured too")
	}
}

// A gateway whose change subscription is cut must not serve its cached grants: the change
// published while it was away reaches nobody.
func TestLostSubscriptionDoesNotKeepAGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("user-1", "read")
	read := request{method: http.MethodGet, path: "/api/contacts", token: e.token("user-1"), org: org}
	warm(t, []string{e.url}, read)

	opts, err := redis.ParseURL(e.cfg.RedisURL)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	killSubscriptions(t, rdb, opts.DB)
	_, err = e.orgs.RemoveMembership(context.Background(), &orgsv1.RemoveMembershipRequest{OrganizationId: org, UserSubject: "user-1"})
	require.NoError(t, err)
	refusedWithin(t, []string{e.url}, read, http.StatusForbidden)
}

// killSubscriptions closes the pub/sub connections that selected db: this test's gateway's,
// not those of the other tests sharing the Redis server.
func killSubscriptions(t *testing.T, rdb *redis.Client, db int) {
	t.Helper()
	ctx := context.Background()
	list, err := rdb.ClientList(ctx).Result()
	require.NoError(t, err)
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		fields := map[string]string{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		if fields["db"] != strconv.Itoa(db) || fields["sub"] == "0" || fields["sub"] == "" {
			continue
		}
		require.NoError(t, rdb.ClientKillByFilter(ctx, "ID", fields["id"]).Err())
		killed++
	}
	require.Positive(t, killed, "the gateway holds a subscription")
}

func TestExpiredTokenIsRefusedEvenWhenCached(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *gateway.Config) { c.JWTLeeway = 0 })
	org := e.member("user-1", "read")
	c := claims("user-1")
	exp := time.Now().Add(2 * time.Second)
	c["exp"] = exp.Unix()
	r := request{method: http.MethodGet, path: "/api/contacts", token: sign(t, e.key, c), org: org}
	require.Equal(t, http.StatusOK, e.do(r).status)
	require.Equal(t, http.StatusOK, e.do(r).status)
	time.Sleep(time.Until(time.Unix(exp.Unix(), 0)) + 50*time.Millisecond)
	res := e.do(r)
	require.Equal(t, http.StatusUnauthorized, res.status, "%s", res.body)
	require.Equal(t, "UNAUTHENTICATED", res.apiErr(t)["code"])
}
