package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/twilio"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// pollCarrier is a local carrier speaking Twilio's Messages API that records when each
// (recipient, text) reached it.
type pollCarrier struct {
	mu      sync.Mutex
	arrived map[string]time.Time
	cond    *sync.Cond
}

func newPollCarrier() *pollCarrier {
	c := &pollCarrier{arrived: map[string]time.Time{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *pollCarrier) server() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		_ = r.ParseForm()
		c.mu.Lock()
		c.arrived[r.PostForm.Get("To")+"|"+r.PostForm.Get("Body")] = at
		c.cond.Broadcast()
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"sid": "SM%s", "status": "queued"}`, strings.ReplaceAll(uuid.NewString(), "-", ""))
	}))
}

// await returns when each phone got body, or errs after timeout.
func (c *pollCarrier) await(phones []string, body string, timeout time.Duration) (map[string]time.Time, error) {
	deadline := time.Now().Add(timeout)
	out := make(map[string]time.Time, len(phones))
	for {
		c.mu.Lock()
		for _, p := range phones {
			if at, ok := c.arrived[p+"|"+body]; ok {
				out[p] = at
			}
		}
		c.mu.Unlock()
		if len(out) == len(phones) {
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d got %q within %s", len(out), len(phones), body, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// benchPolls answers a poll of `questions` open-ended questions for `participants` contacts
// through the Twilio inbound webhook, conc webhooks at a time, and reports answers per second
// and the latency from each answer's webhook to its next question (or the outro) reaching the
// carrier; next to it, the same webhook from contacts in no poll (its HTTP answer: the inbound
// stored, its event published), so the ratio is the poll engine's cost on top of the webhook.
func benchPolls(ctx context.Context, participants, questions, conc int) error {
	carrier := newPollCarrier()
	srv := carrier.server()
	defer srv.Close()
	// A Redis database of its own: polls' consumer groups start at the beginning of the streams,
	// and a shared database holds every earlier run's events.
	redisURL, release, err := redistest.Reserve()
	if err != nil {
		return err
	}
	defer func() { _ = release() }()
	ms, err := startMsgStack(ctx, "chorus_bench_polls", srv.URL, map[string]string{
		"CHORUS_NUMBER_RATE": "100000", "CHORUS_CAMPAIGNS_ADDR": "127.0.0.1:0", "CHORUS_POLLS_ADDR": "127.0.0.1:0",
		"CHORUS_REDIS_URL": redisURL,
	})
	if err != nil {
		return err
	}
	defer ms.close()
	o, err := ms.orgs.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: "bench-polls"})
	if err != nil {
		return err
	}
	org := o.GetOrganization().GetId()
	if _, err := ms.orgs.SetMembership(ctx, &orgsv1.SetMembershipRequest{OrganizationId: org, UserSubject: benchUser, Access: orgsv1.Access_ACCESS_WRITE}); err != nil {
		return err
	}
	if _, err := ms.billing.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: org, Amount: 10_000_000, IdempotencyKey: "bench"}); err != nil {
		return err
	}
	const number = "+16465550998"
	if _, err := ms.messaging.AddNumber(ctx, &messagingv1.AddNumberRequest{OrganizationId: org, Number: number, IsDefault: true}); err != nil {
		return err
	}
	baseline := min(participants, 1000)
	phones, err := seedTextable(ctx, ms.pool, org, participants+baseline, "")
	if err != nil {
		return err
	}
	inPoll, outside := phones[:participants], phones[participants:]
	// Midday in every recipient's zone: quiet hours never hold the questions back.
	zone := noonZone()
	if _, err := ms.pool.Exec(ctx, `UPDATE contacts.contacts SET timezone = $2, is_opted_in = true,
			tags = CASE WHEN phone = ANY($3) THEN '{bench}'::text[] ELSE '{}'::text[] END WHERE organization_id = $1`,
		org, zone, inPoll); err != nil {
		return err
	}
	tok, err := ms.st.Key.Sign(benchUser, 2*time.Hour)
	if err != nil {
		return err
	}
	api := func(method, path string, body any, want int) (map[string]any, error) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, method, ms.st.HTTPURL+path, strings.NewReader(string(raw)))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("x-organization-id", org)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		if res.StatusCode != want {
			return nil, fmt.Errorf("%s %s: %d %v", method, path, res.StatusCode, out)
		}
		return out, nil
	}
	qs := make([]map[string]any, questions)
	for i := range qs {
		qs[i] = map[string]any{"questionNumber": i + 1, "text": fmt.Sprintf("Bench question %d?", i+1), "type": "open_ended", "responseCode": fmt.Sprintf("q%d", i+1)}
	}
	poll, err := api("POST", "/api/polls", map[string]any{"name": "bench", "outroText": "Bench done", "timezone": zone, "questions": qs}, http.StatusCreated)
	if err != nil {
		return err
	}
	id := poll["id"].(string)
	started := time.Now()
	if _, err := api("POST", "/api/polls/"+id+"/start", map[string]any{"contactFilter": map[string]any{"tags": []string{"bench"}}}, http.StatusAccepted); err != nil {
		return err
	}
	// A reply answers a question only once messaging recorded that the carrier took it (its
	// "sent" status event, handled by polls): the fake carrier sees a question a moment before
	// that, so each round waits for polls to know every question left before answering.
	asked := func() error {
		deadline := time.Now().Add(time.Minute)
		for {
			var waiting int
			if err := ms.pool.QueryRow(ctx, `SELECT count(*) FROM polls.participants
				WHERE poll_id = $1 AND status = 'in_progress' AND asked_step < step`, id).Scan(&waiting); err != nil {
				return err
			}
			if waiting == 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d participants' questions not recorded as sent within a minute", waiting)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := carrier.await(inPoll, "Bench question 1?", 10*time.Minute); err != nil {
		return err
	}
	if err := asked(); err != nil {
		return err
	}
	fmt.Printf("\npolls: %d participants, %d questions; start to every question 1 at the carrier: %s\n", participants, questions, time.Since(started).Round(time.Millisecond))

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	hook := ms.st.PublicURL + "/webhooks/twilio/inbound"
	post := func(from string) (time.Time, time.Duration, error) {
		var b [16]byte
		_, _ = rand.Read(b[:])
		form := url.Values{"MessageSid": {"SM" + hex.EncodeToString(b[:])}, "AccountSid": {"ACbench"},
			"From": {from}, "To": {number}, "Body": {"an answer"}, "NumMedia": {"0"}}
		req, _ := http.NewRequestWithContext(ctx, "POST", hook, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Twilio-Signature", twilio.Sign("bench-token", hook, form))
		at := time.Now()
		err := expect(hc.Do(req))(http.StatusOK)
		return at, time.Since(at), err
	}
	// each posts one webhook per phone, conc at a time, and returns when each was posted.
	each := func(list []string) (map[string]time.Time, []time.Duration, error) {
		var mu sync.Mutex
		sent, rtts := make(map[string]time.Time, len(list)), make([]time.Duration, 0, len(list))
		work := make(chan string)
		var firstErr error
		var wg sync.WaitGroup
		for range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for p := range work {
					at, rtt, err := post(p)
					mu.Lock()
					sent[p], rtts = at, append(rtts, rtt)
					if err != nil && firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}()
		}
		for _, p := range list {
			work <- p
		}
		close(work)
		wg.Wait()
		return sent, rtts, firstErr
	}
	var latencies []time.Duration
	began := time.Now()
	for q := 1; q <= questions; q++ {
		sent, _, err := each(inPoll)
		if err != nil {
			return err
		}
		next := fmt.Sprintf("Bench question %d?", q+1)
		if q == questions {
			next = "Bench done"
		}
		got, err := carrier.await(inPoll, next, 10*time.Minute)
		if err != nil {
			return err
		}
		for _, p := range inPoll {
			latencies = append(latencies, got[p].Sub(sent[p]))
		}
		if q < questions {
			if err := asked(); err != nil {
				return err
			}
		}
	}
	elapsed := time.Since(began)
	_, rtts, err := each(outside)
	if err != nil {
		return err
	}
	p50, p99 := percentiles(latencies)
	b50, b99 := percentiles(rtts)
	fmt.Printf("%-58s %12s %12s\n", "case", "p50", "p99")
	fmt.Printf("%-58s %12s %12s\n", "answer webhook -> next question at the carrier", p50, p99)
	fmt.Printf("%-58s %12s %12s\n", "the same webhook, sender in no poll (HTTP answer)", b50, b99)
	fmt.Printf("%-58s %11.1fx\n", "ratio (p50)", float64(p50)/float64(b50))
	fmt.Printf("%d answers in %s: %.0f answers/s (%d webhooks at a time)\n", len(latencies), elapsed.Round(time.Millisecond),
		float64(len(latencies))/elapsed.Seconds(), conc)
	return nil
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

// noonZone is an Etc/GMT±N zone where it is about midday now.
func noonZone() string {
	east := ((12-time.Now().UTC().Hour())%24 + 24) % 24
	if east > 14 { // Etc zones run from 12 hours west to 14 hours east
		east -= 24
	}
	if east == 0 {
		return "Etc/GMT"
	}
	return fmt.Sprintf("Etc/GMT%+d", -east) // POSIX signs: Etc/GMT-3 is 3 hours east
}
