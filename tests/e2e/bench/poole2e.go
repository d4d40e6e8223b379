package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// poolReplierEvery: one contact in this many texted a pool number before the pool-e2e campaign
// (500 of 10,000).
const poolReplierEvery = 20

// poolContactArea is the area code of pool-e2e's contacts, which no pool number has: a
// contact who never texted gets the least busy number.
const poolContactArea = 212

// benchPoolE2E is a campaign sent through a number pool as a user gets it (issue 29): the stack
// as make run starts it, an organization with numbers numbers sending rate messages a second
// each (chorusctl number add --mps), n contacts created through POST /api/contacts, one in
// poolReplierEvery of them having texted a pool number picked at random first (chorusctl
// sandbox inbound: the sandbox carrier's signed webhook), then one POST /api/campaigns from the
// whole pool (fromPhoneNumberIds). It times submission to sentCount reaching n
// (GET /api/campaigns/{id}), which the pool's rates bound at numbers × rate, then reads the
// product's message log read-only (messaging.messages: REST gives neither the number a message
// went from nor when its number's throttle let it go) for the number-seconds in which a number
// was let go more than rate times, and for repliers whose campaign message came from another
// number than the one they texted (the sticky sender).
func benchPoolE2E(ctx context.Context, n, numbers, rate int) error {
	if n < 1 || numbers < 1 || numbers > 400 || rate < 1 {
		return fmt.Errorf("pool-e2e needs recipients and a rate of 1 or more and 1 to 400 numbers (a campaign's pool), not %d, %d and %d", n, rate, numbers)
	}
	_, day, err := zones(time.Now())
	if err != nil {
		return err
	}
	ps, err := startPoolOrg(ctx, "pool", 14, day, numbers, rate, 2*n+1000)
	if err != nil {
		return err
	}
	defer ps.p.stop()
	p, org, ids, pool, writers := ps.p, ps.org, ps.ids, ps.numbers, ps.writers
	fmt.Printf("\npool-e2e: %d contacts through POST /api/contacts (zone %s), %d numbers at %d msg/s each...\n", n, day, numbers, rate)
	if _, err := createContacts(ctx, writers, n, poolContactArea, day, "pool"); err != nil {
		return err
	}
	c := writers[0]
	if err := awaitTextable(ctx, c, n); err != nil {
		return err
	}
	texted, err := textPool(ctx, p, c, n, pool)
	if err != nil {
		return err
	}
	fmt.Printf("  %d of them texted a pool number first\n", len(texted))

	start := time.Now()
	id, err := poolCampaign(ctx, c, "pool", day, ids)
	if err != nil {
		return err
	}
	took, first, err := awaitSent(ctx, c, []string{id}, n, start)
	if err != nil {
		return fmt.Errorf("pool-e2e: %w", err)
	}
	var detail struct {
		PhoneNumbers []struct{ SentCount int }
	}
	if err := c.send(ctx, "GET", "/api/campaigns/"+id, nil, &detail); err != nil {
		return err
	}
	fewest, most := n, 0
	for _, num := range detail.PhoneNumbers {
		fewest, most = min(fewest, num.SentCount), max(most, num.SentCount)
	}
	log, err := readPoolLog(ctx, p.db, org.id, id, rate, texted)
	if err != nil {
		return err
	}
	configured := numbers * rate
	fmt.Printf("%-44s %8.1fs %6.1f msg/s (target: ~%d, %d numbers × %d); first sent after %.1fs\n",
		fmt.Sprintf("pool-e2e, %d, %d numbers: submit to sent", n, numbers), took.Seconds(), float64(n)/took.Seconds(),
		configured, numbers, rate, first.Seconds())
	fmt.Printf("%-44s %d numbers sent %d to %d each\n", "  spread (GET /api/campaigns/{id})", len(detail.PhoneNumbers), fewest, most)
	fmt.Printf("%-44s %.1f msg/s of %d (%.3fx)\n", "  numbers' own rates summed (dispatched_at)", log.perNumberRate, configured, log.perNumberRate/float64(configured))
	fmt.Printf("%-44s %d (target: 0; most one number let go in one second: %d, rate %d)\n", "  number-seconds over rate (dispatched_at)", log.overSeconds, log.mostInASecond, rate)
	fmt.Printf("%-44s %d of %d (target: 0)\n", "  repliers sent from another number", log.unstuck, len(texted))
	return nil
}

// poolSetup is a started product with an organization sending from a pool of numbers, and
// writers of it.
type poolSetup struct {
	p            *product
	org          productOrg
	ids, numbers []string
	writers      []*apiClient
}

// startPoolOrg starts the product on database chorus_bench_<name>_e2e and Redis database
// redisDB, with an organization (zone, credits) whose numbers numbers (+16465550100 and up)
// send rate messages a second each, and e2eCreators writers; the caller stops ps.p.
func startPoolOrg(ctx context.Context, name string, redisDB int, zone string, numbers, rate, credits int) (ps poolSetup, err error) {
	if ps.p, err = startProduct(ctx, "chorus_bench_"+name+"_e2e", redisDB); err != nil {
		return ps, err
	}
	defer func() {
		if err != nil {
			ps.p.stop()
		}
	}()
	if ps.org, err = ps.p.newOrg(ctx, name, zone, "+16465550100", rate, credits); err != nil {
		return ps, err
	}
	if ps.ids, ps.numbers, err = ps.p.addNumbers(ctx, ps.org, "+16465550100", numbers-1, rate); err != nil {
		return ps, err
	}
	ps.writers, err = ps.p.writers(ctx, ps.org, e2eCreators)
	return ps, err
}

// poolCampaign submits a campaign named tag to the contacts tagged tag, in zone, from the pool
// ids (POST /api/campaigns with fromPhoneNumberIds), and returns its id.
func poolCampaign(ctx context.Context, c *apiClient, tag, zone string, ids []string) (string, error) {
	var created struct{ ID string }
	err := c.send(ctx, "POST", "/api/campaigns", map[string]any{
		"name": tag, "message": fanoutMessage, "timezone": zone, "fromPhoneNumberIds": ids,
		"contactFilter": map[string]any{"tags": []string{tag}},
	}, &created)
	return created.ID, err
}

// textPool has one contact in poolReplierEvery of createContacts' n (area poolContactArea) text
// a number of pool picked at random, through chorusctl sandbox inbound, a few at a time; it
// waits until GET /api/conversations shows every thread unanswered and returns the number each
// phone texted.
func textPool(ctx context.Context, p *product, c *apiClient, n int, pool []string) (map[string]string, error) {
	rng := rand.New(rand.NewPCG(29, 29))
	texted := map[string]string{}
	for i := 0; i < n; i += poolReplierEvery {
		texted[contactPhone(poolContactArea, i)] = pool[rng.IntN(len(pool))]
	}
	work := make(chan [2]string)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range cap(errs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				if err := p.ctl(ctx, nil, "sandbox", "inbound", "--to", t[1], "--from", t[0], "--body", "See you Saturday"); err != nil {
					errs <- err
					for range work { // drain, so the sender finishes
					}
					return
				}
			}
		}()
	}
	for phone, number := range texted {
		work <- [2]string{phone, number}
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		var threads []struct{}
		if err := c.send(ctx, "GET", "/api/conversations?unresponded=true", nil, &threads); err != nil {
			return nil, err
		}
		if len(threads) >= len(texted) {
			return texted, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %d of %d inbound texts in GET /api/conversations after a minute", len(threads), len(texted))
		}
	}
}

// poolLog is what the message log says of a pool campaign: the sum of each number's rate (its
// messages after its first over the span from its first to its last dispatch), the
// number-seconds (calendar seconds of dispatched_at, the moment the number's throttle let a
// message go) holding more than the rate, the most in one, and the repliers whose message came
// from another number than the one they texted.
type poolLog struct {
	perNumberRate float64
	overSeconds   int
	mostInASecond int
	unstuck       int
}

// readPoolLog reads campaign's messages of org in database db, in a read-only transaction;
// texted is the number each replier texted. Every replier must have one campaign message.
func readPoolLog(ctx context.Context, db, org, campaign string, rate int, texted map[string]string) (poolLog, error) {
	var l poolLog
	dsn, err := ensureDatabase(ctx, db, false)
	if err != nil {
		return l, err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return l, err
	}
	defer conn.Close(ctx)
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return l, err
	}
	defer func() { _ = tx.Rollback(ctx) }()

	rows, err := tx.Query(ctx, `SELECT count(*), extract(epoch FROM max(dispatched_at) - min(dispatched_at))
		FROM messaging.messages WHERE organization_id = $1 AND source_kind = 'campaign' AND source_id = $2
		GROUP BY our_number`, org, campaign)
	if err != nil {
		return l, fmt.Errorf("per-number spans: %w", err)
	}
	var count int
	var span float64
	if _, err := pgx.ForEachRow(rows, []any{&count, &span}, func() error {
		if count > 1 && span > 0 {
			l.perNumberRate += float64(count-1) / span
		}
		return nil
	}); err != nil {
		return l, fmt.Errorf("per-number spans: %w", err)
	}

	// Every outgoing message of the organization counts against its number's rate.
	rows, err = tx.Query(ctx, `SELECT count(*) FROM messaging.messages
		WHERE organization_id = $1 AND direction = 'outgoing' AND dispatched_at IS NOT NULL
		GROUP BY our_number, date_trunc('second', dispatched_at)`, org)
	if err != nil {
		return l, fmt.Errorf("number-seconds: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&count}, func() error {
		l.mostInASecond = max(l.mostInASecond, count)
		if count > rate {
			l.overSeconds++
		}
		return nil
	}); err != nil {
		return l, fmt.Errorf("number-seconds: %w", err)
	}

	phones := make([]string, 0, len(texted))
	for phone := range texted {
		phones = append(phones, phone)
	}
	rows, err = tx.Query(ctx, `SELECT contact_phone, our_number FROM messaging.messages
		WHERE organization_id = $1 AND contact_phone = ANY($3) AND source_kind = 'campaign' AND source_id = $2`, org, campaign, phones)
	if err != nil {
		return l, fmt.Errorf("repliers' numbers: %w", err)
	}
	var phone, number string
	got := 0
	if _, err := pgx.ForEachRow(rows, []any{&phone, &number}, func() error {
		got++
		if texted[phone] != number {
			l.unstuck++
		}
		return nil
	}); err != nil {
		return l, fmt.Errorf("repliers' numbers: %w", err)
	}
	if got != len(texted) {
		return l, fmt.Errorf("%d campaign messages to the %d repliers", got, len(texted))
	}
	return l, nil
}
