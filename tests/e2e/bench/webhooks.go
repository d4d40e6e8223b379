package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/tenant"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	webhooksv1 "github.com/chorus-sms/chorus/proto/gen/go/webhooks/v1"
)

// webhooksRun is what the webhooks suite was asked for.
type webhooksRun struct {
	orgs, endpoints, events int
}

// benchWebhooks measures outbound webhooks end to end: wr.events inbound messages written to
// messaging's outbox at once, spread over wr.orgs organizations with wr.endpoints endpoints
// each, all on one local receiver that answers 200 at once. It prints deliveries per second
// from the first event's commit to the receiver's last request, signed, each a River attempt
// recorded with its status code.
func benchWebhooks(ctx context.Context, wr webhooksRun) error {
	var received atomic.Int64
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("webhook-signature") != "" {
			received.Add(1)
		}
	}))
	defer rc.Close()
	carrier := fakeTwilio()
	defer carrier.Close()
	ms, err := startMsgStack(ctx, "chorus_bench_webhooks", carrier.URL, map[string]string{"CHORUS_WEBHOOKS_ALLOW_LOOPBACK": "true"})
	if err != nil {
		return err
	}
	defer ms.close()
	hooks := webhooksv1.NewWebhooksServiceClient(ms.dial(ms.st.Addr(registry.Webhooks)))

	orgs := make([]uuid.UUID, wr.orgs)
	for i := range orgs {
		o, err := ms.orgs.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: fmt.Sprint("bench-webhooks-", i), Sandbox: true})
		if err != nil {
			return err
		}
		orgs[i] = uuid.MustParse(o.GetOrganization().GetId())
		octx := tenant.AppendToOutgoing(ctx, tenant.Principal{OrgID: orgs[i], User: "bench", Access: tenant.AccessWrite})
		for j := range wr.endpoints {
			if _, err := hooks.CreateEndpoint(octx, &webhooksv1.CreateEndpointRequest{
				Url: fmt.Sprintf("%s/%d/%d", rc.URL, i, j), Events: []string{"message.received"},
			}); err != nil {
				return fmt.Errorf("create endpoint: %w", err)
			}
		}
	}

	events := make([]outbox.Event, wr.events)
	at := timestamppb.Now()
	for i := range events {
		org := orgs[i%len(orgs)]
		events[i] = outbox.Event{Type: "message.received", OrgID: org, Payload: &eventsv1.MessageReceived{
			OrganizationId: org.String(), MessageId: uuid.NewString(), From: "+12025550100", To: "+13125550100",
			Body: "bench", ReceivedAt: at, Category: "other", Sentiment: "neutral",
		}}
	}
	want := int64(wr.events * wr.endpoints)
	start := time.Now()
	if err := enqueueMessagingEvents(ctx, ms.pool, events); err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for received.Load() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("webhooks: %d of %d deliveries received after 10 minutes", received.Load(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	var succeeded int64
	if err := ms.pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.deliveries WHERE status = 'succeeded'`).Scan(&succeeded); err != nil {
		return err
	}
	fmt.Printf("\nwebhooks: %d events x %d endpoints each (%d organizations) = %d deliveries to a local receiver in %s: %.0f deliveries/s (target: at least 1,000)\n",
		wr.events, wr.endpoints, wr.orgs, want, took.Round(time.Millisecond), float64(want)/took.Seconds())
	fmt.Printf("recorded as succeeded when the last arrived: %d (the rest are recorded just after their request)\n", succeeded)
	return nil
}
