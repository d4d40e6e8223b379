package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/tenant"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/stack"

	"github.com/google/uuid"
)

// msgStack is a stack on a fresh database whose live carrier is a local server speaking
// Twilio's Messages API (sandbox organizations use the sandbox carrier).
type msgStack struct {
	st        *stack.Stack
	pool      *pgxpool.Pool
	orgs      orgsv1.OrgsServiceClient
	billing   billingv1.BillingServiceClient
	messaging messagingv1.MessagingServiceClient
	conns     []*grpc.ClientConn
	close     func()
}

func startMsgStack(ctx context.Context, dbName, carrierURL string, vars map[string]string) (*msgStack, error) {
	dsn, err := ensureDatabase(ctx, dbName, true)
	if err != nil {
		return nil, err
	}
	keyDir, err := os.MkdirTemp("", "chorus-bench")
	if err != nil {
		return nil, err
	}
	all := map[string]string{
		"CHORUS_DATABASE_URL": dsn, "CHORUS_DEV_JWKS_ADDR": "127.0.0.1:0", "CHORUS_DEV_KEY": filepath.Join(keyDir, "key.pem"),
		"CHORUS_RATE_LIMIT": "1000000", "CHORUS_RATE_BURST": "1000000",
		"CHORUS_SMS_PROVIDER": "twilio", "CHORUS_TWILIO_ACCOUNT_SID": "ACbench", "CHORUS_TWILIO_AUTH_TOKEN": "bench-token",
		"CHORUS_TWILIO_API_URL": carrierURL, "CHORUS_CURSOR_SECRET": "bench-cursor-secret",
		"CHORUS_SANDBOX_AUTH_TOKEN": "bench-sandbox-token",
	}
	for _, svc := range registry.All {
		all[svc.AddrVar] = "127.0.0.1:0" // free ports: a dev stack or another bench may be running
	}
	for k, v := range vars {
		all[k] = v
	}
	r := envconfig.FromMap(all)
	cfg := stack.ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		return nil, err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := stack.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		st.Close()
		return nil, err
	}
	ms := &msgStack{st: st, pool: pool}
	ms.orgs = orgsv1.NewOrgsServiceClient(ms.dial(st.Addr(registry.Orgs)))
	ms.billing = billingv1.NewBillingServiceClient(ms.dial(st.Addr(registry.Billing)))
	ms.messaging = messagingv1.NewMessagingServiceClient(ms.dial(st.Addr(registry.Messaging)))
	ms.close = func() {
		for _, c := range ms.conns {
			_ = c.Close()
		}
		pool.Close()
		st.Close()
		_ = os.RemoveAll(keyDir)
	}
	return ms, nil
}

// dial connects to one of the stack's services; close closes the connection.
func (ms *msgStack) dial(addr string) *grpc.ClientConn {
	c, _ := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	ms.conns = append(ms.conns, c)
	return c
}

// payingOrg creates an organization with credits and returns its id and a context acting for
// it with write access.
func (ms *msgStack) payingOrg(ctx context.Context, name string, credits int) (string, context.Context, error) {
	o, err := ms.orgs.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: name})
	if err != nil {
		return "", nil, err
	}
	org := o.GetOrganization().GetId()
	if _, err := ms.billing.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: org, Amount: int32(credits), IdempotencyKey: "bench"}); err != nil {
		return "", nil, err
	}
	octx := tenant.AppendToOutgoing(ctx, tenant.Principal{OrgID: uuid.MustParse(org), User: "bench", Access: tenant.AccessWrite})
	return org, octx, nil
}

// fakeTwilio answers every send at once, as Twilio's Messages API does on success.
func fakeTwilio() *httptest.Server {
	return newCarrierLog().server()
}

// carrierLog is a local carrier speaking Twilio's Messages API that records when each send
// reached it, by sending number: the carrier's own view of each number's pace.
type carrierLog struct {
	mu      sync.Mutex
	arrived map[string][]time.Time
}

func newCarrierLog() *carrierLog { return &carrierLog{arrived: map[string][]time.Time{}} }

// server answers every send at once, as Twilio does on success, and records it.
func (c *carrierLog) server() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		_ = r.ParseForm()
		c.mu.Lock()
		c.arrived[r.PostForm.Get("From")] = append(c.arrived[r.PostForm.Get("From")], at)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"sid": "SM%s", "status": "queued", "to": %q}`, strings.ReplaceAll(uuid.NewString(), "-", ""), r.PostForm.Get("To"))
	}))
}

// pace is what the carrier saw: sends, the span from the first to the last, the achieved rate
// (summed over numbers: each number's sends after its first over its own span), how long after
// the first number's first send the last number's first came (numbers served one after
// another show it), and the number-seconds (calendar seconds of the carrier's clock) in which
// a number sent more than rate.
type pace struct {
	sends         int
	span          time.Duration
	perNumberRate float64
	lastStart     time.Duration
	overGrants    int
	mostInASecond int
}

func (c *carrierLog) pace(rate int) pace {
	c.mu.Lock()
	defer c.mu.Unlock()
	var p pace
	var first, last, lastFirst time.Time
	for _, at := range c.arrived {
		slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
		p.sends += len(at)
		if first.IsZero() || at[0].Before(first) {
			first = at[0]
		}
		if at[0].After(lastFirst) {
			lastFirst = at[0]
		}
		if at[len(at)-1].After(last) {
			last = at[len(at)-1]
		}
		if len(at) > 1 {
			p.perNumberRate += float64(len(at)-1) / at[len(at)-1].Sub(at[0]).Seconds()
		}
		perSecond := map[int64]int{}
		for _, t := range at {
			perSecond[t.Unix()]++
		}
		for _, n := range perSecond {
			p.mostInASecond = max(p.mostInASecond, n)
			if n > rate {
				p.overGrants++
			}
		}
	}
	p.span = last.Sub(first)
	p.lastStart = lastFirst.Sub(first)
	return p
}

// seedTextable inserts n opted-in, textable contacts with valid, distinct phones, names from
// the lists, and zone as their timezone ("" none). Their ids are UUIDv7, in creation order,
// as contacts gives them (a table seeded with random ids would be read in id order, as the
// audience is, one heap page per contact: 6.6 of the fan-out's 15 s of PostgreSQL at
// 1,000,000).
func seedTextable(ctx context.Context, pool *pgxpool.Pool, org string, n int, zone string) ([]string, error) {
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	rows, err := pool.Query(ctx, `
		INSERT INTO contacts.contacts (id, organization_id, phone, first_name, last_name, is_textable, timezone, created_at, updated_at)
		SELECT t.id, $1, '+1' || (ARRAY['202','212','312','415','617','713','305','206','404','503'])[1 + i % 10]
		       || (200 + i / 100000)::text || lpad(((i / 10) % 10000)::text, 4, '0'),
		       ($4::text[])[1 + i % cardinality($4::text[])], ($5::text[])[1 + i / 7 % cardinality($5::text[])],
		       true, $3, now(), now()
		FROM unnest($2::uuid[]) WITH ORDINALITY AS t(id, n), LATERAL (SELECT t.n - 1 AS i) s
		ORDER BY t.n
		RETURNING phone`, org, ids, zone, firstNames, lastNames)
	if err != nil {
		return nil, err
	}
	var phones []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		phones = append(phones, p)
	}
	return phones, rows.Err()
}

// benchDispatch queues count campaign messages of a paying organization, posted against the
// campaign's hold, from numbers sending numbers each given rate messages per second
// (AddNumber's messages_per_second, as `chorusctl number add --mps`), through a local carrier
// speaking Twilio's API. It reports the achieved rate against the configured one and, from the
// carrier's timestamps, each number-second in which a number sent more than its rate. With
// bulk, the messages are queued as a campaign queues them (bulk batches: messaging creates
// each batch's messages and jobs as the dispatch queue drains), else created at once.
func benchDispatch(ctx context.Context, count, numbers, rate int, bulk bool) error {
	log := newCarrierLog()
	carrier := log.server()
	defer carrier.Close()
	ms, err := startMsgStack(ctx, "chorus_bench_dispatch", carrier.URL, map[string]string{
		"CHORUS_NUMBER_RATE": "1", "CHORUS_DISPATCH_WORKERS": "500", "CHORUS_DB_MAX_CONNS": "40",
	})
	if err != nil {
		return err
	}
	defer ms.close()
	org, octx, err := ms.payingOrg(ctx, "bench-dispatch", count)
	if err != nil {
		return err
	}
	hold := uuid.NewString()
	if _, err := ms.billing.PlaceHold(octx, &billingv1.PlaceHoldRequest{HoldId: hold, Credits: int32(count)}); err != nil {
		return err
	}
	var ids []string
	for i := range numbers {
		n, err := ms.messaging.AddNumber(ctx, &messagingv1.AddNumberRequest{OrganizationId: org,
			Number: fmt.Sprintf("+1646555%04d", 1000+i), MessagesPerSecond: int32(rate)})
		if err != nil {
			return err
		}
		ids = append(ids, n.GetPhoneNumberId())
	}
	phones, err := seedTextable(ctx, ms.pool, org, count, "")
	if err != nil {
		return err
	}
	how := "created at once"
	if bulk {
		how = "in bulk batches"
	}
	fmt.Printf("\ndispatch: queueing %d messages (%s) from %d numbers at %d/s each (configured %d/s)...\n", count, how, numbers, rate, numbers*rate)
	queueStart := time.Now()
	// Message i goes from number i % numbers; a bulk batch is one number's (as a campaign's is),
	// so in bulk each number's messages are queued in batches of their own, in turn.
	groups := 1 // every message in order, batches mixing the numbers
	if bulk {
		groups = numbers // number k's messages: k, k + numbers, ...
	}
	var batch []*messagingv1.OutgoingMessage
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var err error
		if bulk {
			_, err = ms.messaging.QueueBulk(octx, &messagingv1.QueueBulkRequest{Messages: batch})
		} else {
			_, err = ms.messaging.SendMessages(octx, &messagingv1.SendMessagesRequest{Messages: batch})
		}
		batch = batch[:0]
		return err
	}
	for k := range groups {
		for i := k; i < count; i += groups {
			batch = append(batch, &messagingv1.OutgoingMessage{
				DedupeKey: fmt.Sprintf("bench:%d", i), To: phones[i], Body: "Bench message " + fmt.Sprint(i),
				FromPhoneNumberId: ids[i%numbers], SourceKind: "campaign", SourceId: "bench", HoldId: hold,
			})
			if len(batch) == 1000 {
				if err := flush(); err != nil {
					return fmt.Errorf("queue: %w", err)
				}
			}
		}
		if err := flush(); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
	}
	fmt.Printf("queued in %s\n", time.Since(queueStart).Round(time.Millisecond))
	for {
		var done int
		if err := ms.pool.QueryRow(ctx, `SELECT count(*) FROM messaging.messages WHERE status NOT IN ('queued', 'sending')`).Scan(&done); err != nil {
			return err
		}
		if done >= count {
			break
		}
		fmt.Printf("  %d/%d dispatched (%s)\n", done, count, time.Since(queueStart).Round(time.Second))
		time.Sleep(5 * time.Second)
	}
	var failed, debited int
	if err := ms.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'failed') FROM messaging.messages`).Scan(&failed); err != nil {
		return err
	}
	if err := ms.pool.QueryRow(ctx, `SELECT count(*) FROM billing.ledger WHERE organization_id = $1 AND kind = 'debit'`, org).Scan(&debited); err != nil {
		return err
	}
	p := log.pace(rate)
	configured := float64(numbers * rate)
	fmt.Printf("%-44s %d (failed %d, debits %d)\n", "messages the carrier took", p.sends, failed, debited)
	fmt.Printf("%-44s %.1fs\n", "first to last send (carrier clock)", p.span.Seconds())
	together := float64(p.sends-numbers) / p.span.Seconds() // each number's first send starts its clock
	fmt.Printf("%-44s %.0f/s of %.0f/s configured (%.3fx)\n", "messages handed to the carrier per second", together, configured, together/configured)
	fmt.Printf("%-44s %.1f/s of %.0f/s configured (%.3fx)\n", "achieved rate (sum of each number's own)", p.perNumberRate, configured, p.perNumberRate/configured)
	fmt.Printf("%-44s %.1fs\n", "last number's first send after the first's", p.lastStart.Seconds())
	fmt.Printf("%-44s %d (most one number sent in one second: %d, rate %d)\n", "number-seconds over the rate (carrier clock)", p.overGrants, p.mostInASecond, rate)
	if p.sends != count || debited != count {
		return fmt.Errorf("the carrier took %d and billing debited %d of %d messages", p.sends, debited, count)
	}
	return nil
}

// benchReply times replies through the gateway against the same Twilio API call made directly.
func benchReply(ctx context.Context, n int) error {
	carrier := fakeTwilio()
	defer carrier.Close()
	ms, err := startMsgStack(ctx, "chorus_bench_reply", carrier.URL, map[string]string{"CHORUS_NUMBER_RATE": "100000"})
	if err != nil {
		return err
	}
	defer ms.close()
	o, err := ms.orgs.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "bench-reply"})
	if err != nil {
		return err
	}
	org := o.GetOrganization().GetId()
	if _, err := ms.orgs.SetMembership(ctx, &orgsv1.SetMembershipRequest{OrganizationId: org, UserSubject: benchUser, Access: orgsv1.Access_ACCESS_WRITE}); err != nil {
		return err
	}
	if _, err := ms.billing.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: org, Amount: 1_000_000, IdempotencyKey: "bench"}); err != nil {
		return err
	}
	if _, err := ms.messaging.AddNumber(ctx, &messagingv1.AddNumberRequest{OrganizationId: org, Number: "+16465550999"}); err != nil {
		return err
	}
	phones, err := seedTextable(ctx, ms.pool, org, 1, "")
	if err != nil {
		return err
	}
	tok, err := ms.st.Key.Sign(benchUser, time.Hour)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	replyPath := ms.st.HTTPURL + "/api/conversations/" + url.PathEscape(phones[0]) + "/reply"
	reply, err := measure(n, func(int) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", replyPath, strings.NewReader(`{"message": "Thanks, see you at 9"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("x-organization-id", org)
		req.Header.Set("Content-Type", "application/json")
		return expect(hc.Do(req))(http.StatusOK)
	})
	if err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	form := url.Values{"To": {phones[0]}, "From": {"+16465550999"}, "Body": {"Thanks, see you at 9"}, "StatusCallback": {ms.st.HTTPURL + "/webhooks/twilio/status?messageId=" + uuid.NewString()}}
	direct, err := measure(n, func(int) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", carrier.URL+"/2010-04-01/Accounts/ACbench/Messages.json", strings.NewReader(form.Encode()))
		req.SetBasicAuth("ACbench", "bench-token")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return expect(hc.Do(req))(http.StatusCreated)
	})
	if err != nil {
		return fmt.Errorf("direct: %w", err)
	}
	fmt.Printf("\nreply, %d sequential requests a side\n", n)
	fmt.Printf("%-44s %12s %12s\n", "case", "p50", "p99")
	fmt.Printf("%-44s %12s %12s\n", "POST /api/conversations/:phone/reply", reply.p50, reply.p99)
	fmt.Printf("%-44s %12s %12s\n", "the Twilio Messages API call alone", direct.p50, direct.p99)
	fmt.Printf("%-44s %11.1fx\n", "ratio (p50)", float64(reply.p50)/float64(direct.p50))
	return benchConversationList(ctx, ms, org, tok, hc, n)
}

// listThreads is the size of the conversation-list case: the spec answers every thread.
const listThreads = 10_000

// benchConversationList times GET /api/conversations answering all of listThreads threads (read
// from messaging a page at a time and streamed out), against reading the same rows in one
// query.
func benchConversationList(ctx context.Context, ms *msgStack, org, tok string, hc *http.Client, n int) error {
	_, err := ms.pool.Exec(ctx, `INSERT INTO messaging.conversations
		(organization_id, phone, last_message, last_message_at, last_direction)
		SELECT $1, '+1303' || lpad(i::text, 7, '0'), 'See you at 9, thread ' || i, now() - i * interval '1 second', 'incoming'
		FROM generate_series(1, $2::int) AS i`, org, listThreads)
	if err != nil {
		return fmt.Errorf("seed threads: %w", err)
	}
	list, err := measure(n, func(int) error {
		req, _ := http.NewRequestWithContext(ctx, "GET", ms.st.HTTPURL+"/api/conversations", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("x-organization-id", org)
		return expect(hc.Do(req))(http.StatusOK)
	})
	if err != nil {
		return fmt.Errorf("conversation list: %w", err)
	}
	raw, err := measure(n, func(int) error {
		rows, err := ms.pool.Query(ctx, `SELECT phone, last_message, last_message_at, last_direction, unread_count, is_archived, is_starred
			FROM messaging.conversations WHERE organization_id = $1 AND NOT is_archived ORDER BY last_message_at DESC, phone`, org)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		rows.Close()
		return rows.Err()
	})
	if err != nil {
		return fmt.Errorf("raw thread list: %w", err)
	}
	fmt.Printf("\nconversation list, %d threads (every one answered), %d sequential requests a side\n", listThreads+1, n)
	fmt.Printf("%-44s %12s %12s\n", "case", "p50", "p99")
	fmt.Printf("%-44s %12s %12s\n", "GET /api/conversations", list.p50, list.p99)
	fmt.Printf("%-44s %12s %12s\n", "the same rows in one SQL query", raw.p50, raw.p99)
	return nil
}

// expect reads and closes a response and checks its status.
func expect(res *http.Response, err error) func(want int) error {
	return func(want int) error {
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			return fmt.Errorf("status %d: %s", res.StatusCode, b)
		}
		return nil
	}
}
