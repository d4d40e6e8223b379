package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"time"
)

// benchCampaignE2E is what a user gets from a campaign: the stack as make run starts it (the
// sandbox carrier, default workers and pools), an organization with numbers sending numbers at
// 5,000 messages a second each, made with chorusctl, n contacts created through
// POST /api/contacts (a zone where it is day, all textable) and tagged, a tag per number, then
// POST /api/campaigns to each tag from its number, all at once. It times submission to the
// campaigns' sentCounts adding up to n as GET /api/campaigns/{id} reports them, and the CPU every
// process serving the product spent meanwhile (bin/chorus, PostgreSQL, Redis, from /proc).
func benchCampaignE2E(ctx context.Context, n, numbers int) (perMessage, error) {
	_, day, err := zones(time.Now())
	if err != nil {
		return perMessage{}, err
	}
	p, err := startProduct(ctx, "chorus_bench_e2e", 12)
	if err != nil {
		return perMessage{}, err
	}
	defer p.stop()
	org, err := p.newOrg(ctx, "campaign", day, "+16465550100", 5000, 2*n+1000)
	if err != nil {
		return perMessage{}, err
	}
	from, _, err := p.addNumbers(ctx, org, "+16465550100", numbers-1, 5000)
	if err != nil {
		return perMessage{}, err
	}
	tags := make([]string, numbers)
	for k := range tags {
		tags[k] = fmt.Sprintf("e2e-%d", k)
	}
	writers, err := p.writers(ctx, org, e2eCreators)
	if err != nil {
		return perMessage{}, err
	}
	fmt.Printf("\ncampaign-e2e: %d contacts through POST /api/contacts (%d clients over %d users, zone %s), %d number(s)...\n",
		n, e2eCreateConns, e2eCreators, day, numbers)
	rate, err := createContacts(ctx, writers, n, 646, day, tags...)
	if err != nil {
		return perMessage{}, err
	}
	fmt.Printf("  created at %.0f/s; textable once their lookups complete\n", rate)
	c := writers[0]
	if err := awaitTextable(ctx, c, n); err != nil {
		return perMessage{}, err
	}

	stmts := newStatements(ctx, p.db)
	defer stmts.close()
	u0 := readUsage()
	start := time.Now()
	ids := make([]string, numbers)
	for k := range numbers {
		var created struct{ ID string }
		if err := c.send(ctx, "POST", "/api/campaigns", map[string]any{
			"name": "e2e " + tags[k], "message": fanoutMessage, "timezone": day, "fromPhoneNumberId": from[k],
			"contactFilter": map[string]any{"tags": []string{tags[k]}},
		}, &created); err != nil {
			return perMessage{}, err
		}
		ids[k] = created.ID
	}
	took, first, err := awaitSent(ctx, c, ids, n, start)
	if err != nil {
		return perMessage{}, fmt.Errorf("campaign-e2e: %w", err)
	}
	u := readUsage().sub(u0)
	per := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(n) }
	fmt.Printf("%-44s %8.1fs %10.0f msg/s (target: 2,000 or more); first sent after %.1fs\n",
		fmt.Sprintf("campaign-e2e, %d, %d number(s): submit to sent", n, numbers), took.Seconds(), float64(n)/took.Seconds(), first.Seconds())
	fmt.Printf("%-44s %.3f ms (target: 0.5 or less): bin/chorus %.3f, PostgreSQL %.3f, Redis %.3f\n",
		"  CPU per message, every process", per(u.total()), per(u.chorus), per(u.postgres), per(u.redis))
	fmt.Printf("%-44s %.3f ms\n", "  time per message (submit to sent)", per(took))
	fmt.Printf("%-44s %.1fs of %.1fs x %d CPUs (large: the figures above are inflated)\n",
		"  CPU taken by the host (steal)", u.steal.Seconds(), took.Seconds(), runtime.NumCPU())
	fmt.Printf("%-44s %d MB\n", "  bin/chorus peak RSS", u.peakRSS/1024)
	stmts.print(ctx, n)
	return perMessage{n: n, wall: per(took), cpu: per(u.total())}, nil
}

// perMessage is one campaign-e2e run's time and CPU per message, in milliseconds.
type perMessage struct {
	n         int
	wall, cpu float64
}

// printFlatness compares the runs of several audience sizes with the smallest: the target is
// a time per message within 25% of it at every size.
func printFlatness(runs []perMessage) {
	if len(runs) < 2 {
		return
	}
	base := runs[0]
	for _, r := range runs[1:] {
		fmt.Printf("campaign-e2e, %d against %d: time per message %+.0f%%, CPU per message %+.0f%% (target: time within 25%%)\n",
			r.n, base.n, 100*(r.wall/base.wall-1), 100*(r.cpu/base.cpu-1))
	}
}

// campaignsSent adds up the campaigns' sentCount and failedCount, and names a status any of
// them ended in short of sending everything (failed, canceled), as GET /api/campaigns/{id}
// reports them.
func campaignsSent(ctx context.Context, c *apiClient, ids []string) (sent, failed int, ended string, err error) {
	for _, id := range ids {
		var cp struct {
			Status                 string
			SentCount, FailedCount int
		}
		if err := c.send(ctx, "GET", "/api/campaigns/"+id, nil, &cp); err != nil {
			return 0, 0, "", err
		}
		sent, failed = sent+cp.SentCount, failed+cp.FailedCount
		if cp.Status == "failed" || cp.Status == "canceled" {
			ended = cp.Status
		}
	}
	return sent, failed, ended, nil
}

// awaitSent waits until the campaigns ids, submitted at start, have sent n messages between
// them (campaignsSent), printing the count every 10 seconds, and returns how long after start
// that was and when the first was sent. A failed message or a campaign that ended short fails
// the wait.
func awaitSent(ctx context.Context, c *apiClient, ids []string, n int, start time.Time) (took, first time.Duration, err error) {
	for last := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		sent, failed, status, err := campaignsSent(ctx, c, ids)
		if err != nil {
			return 0, 0, err
		}
		if first == 0 && sent > 0 {
			first = time.Since(start)
		}
		if sent+failed >= n {
			if failed > 0 {
				return 0, 0, fmt.Errorf("%d of %d failed", failed, n)
			}
			return time.Since(start), first, nil
		}
		if status != "" {
			return 0, 0, fmt.Errorf("a campaign %s", status)
		}
		if time.Since(last) > 10*time.Second {
			last = time.Now()
			fmt.Printf("  %s: %d sent\n", time.Since(start).Round(time.Second), sent)
		}
	}
}

// addNumbers gives org k numbers more after first (its own: +1NPA555 and four digits, the next
// ones counting up from it), each sending mps messages a second (chorusctl number add --mps),
// and returns the ids and numbers of all of them, first's first.
func (p *product) addNumbers(ctx context.Context, org productOrg, first string, k, mps int) (ids, numbers []string, err error) {
	ids, numbers = []string{org.numberID}, []string{first}
	base, err := strconv.Atoi(first[len(first)-4:])
	if err != nil {
		return nil, nil, fmt.Errorf("number %s: %w", first, err)
	}
	for i := 1; i <= k; i++ {
		number := fmt.Sprintf("%s%04d", first[:len(first)-4], base+i)
		var num struct{ PhoneNumberID string }
		if err := p.ctl(ctx, &num, "number", "add", "--org", org.id, "--number", number, "--mps", strconv.Itoa(mps)); err != nil {
			return nil, nil, err
		}
		ids, numbers = append(ids, num.PhoneNumberID), append(numbers, number)
	}
	return ids, numbers, nil
}

// writers are k users with write access to org, each a client of its own.
func (p *product) writers(ctx context.Context, org productOrg, k int) ([]*apiClient, error) {
	return p.clients(ctx, org, "bench-writer", "write", k)
}

// awaitTextable waits until the organization's n contacts are all textable (their background
// lookups done), as GET /api/contacts?isTextable=true&includeTotal=true counts them.
func awaitTextable(ctx context.Context, c *apiClient, n int) error {
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(time.Second) {
		var page struct{ Total int }
		if err := c.send(ctx, "GET", "/api/contacts?limit=1&isTextable=true&includeTotal=true", nil, &page); err != nil {
			return err
		}
		if page.Total >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d contacts textable after 10 minutes", page.Total, n)
		}
	}
}
