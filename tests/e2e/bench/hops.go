package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"

	"github.com/go-redis/redis_rate/v10"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/stack"
)

// benchHops times each hop of a page-1 request on its own, one client, so the gateway's p50
// can be read as a sum: the HTTP hop (an open route, /healthz), the rate-limit decision in
// Redis, the gRPC call to contacts made directly (its handler and query included), and the
// query through raw pgx.
func benchHops(ctx context.Context, st *stack.Stack, c *apiClient, pool *pgxpool.Pool, n int, sql string, args []any) error {
	org, err := uuid.Parse(c.org)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	limiter := redis_rate.NewLimiter(rdb)
	limit := redis_rate.PerSecond(1_000_000)
	cc, err := clients.DialGRPC("contacts", st.Addr(registry.Contacts))
	if err != nil {
		return err
	}
	defer cc.Close()
	contacts := contactsv1.NewContactsServiceClient(cc)
	rpcCtx := tenant.AppendToOutgoing(ctx, tenant.Principal{OrgID: org, User: benchUser, Access: tenant.AccessRead})

	hops := []struct {
		name string
		f    func(int) error
	}{
		{"gateway, list page 1", func(int) error { _, err := c.fetch(ctx, "/api/contacts?limit=50"); return err }},
		{"gateway, list of 1 contact", func(int) error { _, err := c.fetch(ctx, "/api/contacts?limit=1"); return err }},
		{"HTTP hop (GET /healthz)", func(int) error { return get(ctx, c.http, c.base+"/healthz") }},
		{"Redis rate-limit decision", func(int) error {
			_, err := limiter.Allow(ctx, "chorus:bench:hops", limit)
			return err
		}},
		{"gRPC ListContacts, direct", func(int) error {
			_, err := contacts.ListContacts(rpcCtx, &contactsv1.ListContactsRequest{Limit: wrapperspb.Int32(50)})
			return err
		}},
		{"gRPC ListContacts of 1, direct", func(int) error {
			_, err := contacts.ListContacts(rpcCtx, &contactsv1.ListContactsRequest{Limit: wrapperspb.Int32(1)})
			return err
		}},
		{"SQL through raw pgx", func(int) error { return rawQuery(ctx, pool, sql, args) }},
	}
	fmt.Printf("\nwhere page 1's time goes, one client, %d timed calls each (allocations: whole process, per call)\n%-34s %12s %12s %12s %12s\n",
		n, "hop", "p50", "p99", "allocs", "bytes")
	for _, h := range hops {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t, err := measure(n, h.f)
		if err != nil {
			return fmt.Errorf("%s: %w", h.name, err)
		}
		runtime.ReadMemStats(&after)
		calls := uint64(n + 20) // measure warms up with 20
		fmt.Printf("%-34s %12s %12s %12d %12d\n", h.name, t.p50, t.p99,
			(after.Mallocs-before.Mallocs)/calls, (after.TotalAlloc-before.TotalAlloc)/calls)
	}
	return nil
}

func get(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return err
}
