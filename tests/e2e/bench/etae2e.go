package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/quiethours"
)

// etaAreas are the zones eta-e2e can spread contacts over, each with the area code of a city
// in it that its contacts' phones get (their state's law is part of their quiet hours).
var etaAreas = map[string]int{
	"America/New_York":    212,
	"America/Chicago":     312,
	"America/Denver":      303,
	"America/Phoenix":     602,
	"America/Los_Angeles": 213,
	"America/Anchorage":   907,
	"Pacific/Honolulu":    808,
}

// etaEvery is how often eta-e2e reads the campaign's estimate while it sends.
const etaEvery = 15 * time.Second

// etaReading is one GET /api/campaigns/{id}'s estimatedCompletionAt, read at `at`.
type etaReading struct {
	at, eta time.Time
	sent    int
}

// benchETAE2E holds estimatedCompletionAt (issue 29) against what a campaign does: the stack as
// make run starts it, an organization with numbers numbers sending rate messages a second each
// (chorusctl number add --mps), n contacts created through POST /api/contacts spread evenly
// over zones (each contact's timezone, a phone of a city of the zone), then one POST
// /api/campaigns from the whole pool in the first zone. It reads the estimate right after
// submission (the first answer that has one: none until the audience is resolved) and every
// etaEvery until the campaign completes, and prints each reading's error as a share of the
// campaign's duration (submission to the last message's dispatched_at, read from the
// product's message log, read-only: REST does not say when the last message went). When a
// zone is in its quiet hours now, or enters them before the estimated end, its messages go
// hours later: the run prints what the estimate predicts for each such zone and stops there,
// as it cannot wait to check it.
func benchETAE2E(ctx context.Context, n int, zoneList string, numbers, rate int) error {
	zones := strings.Split(zoneList, ",")
	if n < len(zones) || numbers < 1 || numbers > 400 || rate < 1 {
		return fmt.Errorf("eta-e2e needs a contact per zone at least, a rate of 1 or more and 1 to 400 numbers, not %d, %d and %d", n, rate, numbers)
	}
	seen := map[string]bool{}
	for _, z := range zones {
		if _, ok := etaAreas[z]; !ok || seen[z] {
			return fmt.Errorf("eta-e2e zones must be distinct US zones of %v, not %q", slices.Sorted(maps.Keys(etaAreas)), zoneList)
		}
		seen[z] = true
	}
	campaignZone := zones[0]
	ps, err := startPoolOrg(ctx, "eta", 15, campaignZone, numbers, rate, 2*n+1000)
	if err != nil {
		return err
	}
	defer ps.p.stop()
	p, org, ids, writers := ps.p, ps.org, ps.ids, ps.writers
	fmt.Printf("\neta-e2e: %d contacts through POST /api/contacts over %s, %d numbers at %d msg/s each (%d msg/s)...\n",
		n, zoneList, numbers, rate, numbers*rate)
	queues := make([]quiethours.Queue, len(zones))
	for i, z := range zones {
		count := n / len(zones)
		if i < n%len(zones) {
			count++
		}
		area := etaAreas[z]
		if _, err := createContacts(ctx, writers, count, area, z, "eta"); err != nil {
			return err
		}
		phone := contactPhone(area, 0)
		queues[i] = quiethours.Queue{Count: count,
			Message: quiethours.Message{Zone: campaignZone, RecipientZone: z, State: quiethours.RecipientState("", phone)}}
	}
	c := writers[0]
	if err := awaitTextable(ctx, c, n); err != nil {
		return err
	}

	start := time.Now()
	id, err := poolCampaign(ctx, c, "eta", campaignZone, ids)
	if err != nil {
		return err
	}
	first, err := awaitEstimate(ctx, c, id)
	if err != nil {
		return err
	}
	fmt.Printf("  estimate %.1fs after submission: done in %.1fs\n", first.at.Sub(start).Seconds(), first.eta.Sub(start).Seconds())

	var held []int
	for i, q := range queues {
		// Held now, or held from before the estimated end (its window closes meanwhile).
		closes, ok := q.Message.Closes(start)
		if q.Message.Wait(start) > 0 || ok && closes.Before(first.eta) {
			held = append(held, i)
		}
	}
	if len(held) > 0 {
		total := float64(numbers * rate)
		for _, i := range held {
			q := queues[i]
			fmt.Printf("  %s is in its quiet hours or enters them before the end: its %d messages may go from %s; alone at %.0f msg/s they would be done at %s\n",
				zones[i], q.Count, start.Add(q.Message.Wait(start)).UTC().Format(time.RFC3339), total,
				quiethours.Estimate(start, total, []quiethours.Queue{q}).UTC().Format(time.RFC3339))
		}
		fmt.Printf("  the campaign's estimate: %s. This run cannot check it (hours away); run eta-e2e while every zone is open\n",
			first.eta.UTC().Format(time.RFC3339))
		return nil
	}

	readings, err := followEstimate(ctx, c, id, n, first)
	if err != nil {
		return err
	}
	done, err := lastDispatch(ctx, p.db, org.id, id)
	if err != nil {
		return err
	}
	took := done.Sub(start)
	fmt.Printf("%-44s %8.1fs %6.1f msg/s (pool: %d msg/s)\n", fmt.Sprintf("eta-e2e, %d over %d zones: submit to last sent", n, len(zones)),
		took.Seconds(), float64(n)/took.Seconds(), numbers*rate)
	worst := 0.0
	for i, r := range readings {
		e := 100 * r.eta.Sub(done).Seconds() / took.Seconds()
		if i > 0 {
			worst = max(worst, math.Abs(e))
		}
		fmt.Printf("  at %5.1fs (%5d sent): estimate %7.1fs, error %+6.1f%% of the duration\n",
			r.at.Sub(start).Seconds(), r.sent, r.eta.Sub(start).Seconds(), e)
	}
	fmt.Printf("%-44s %+.1f%% at submission, %.1f%% at worst during (target: within 10%%)\n", "  ETA error",
		100*first.eta.Sub(done).Seconds()/took.Seconds(), worst)
	return nil
}

// campaignETA is what GET /api/campaigns/{id} says of a campaign's progress.
type campaignETA struct {
	Status         string
	SentCount      int
	FailedCount    int
	DisplayMetrics struct {
		EstimatedCompletionAt *time.Time
	}
}

func readETA(ctx context.Context, c *apiClient, id string) (campaignETA, error) {
	var cp campaignETA
	err := c.send(ctx, "GET", "/api/campaigns/"+id, nil, &cp)
	return cp, err
}

// awaitEstimate reads campaign id until it has an estimate, which it has once its audience is
// resolved.
func awaitEstimate(ctx context.Context, c *apiClient, id string) (etaReading, error) {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		cp, err := readETA(ctx, c, id)
		if err != nil {
			return etaReading{}, err
		}
		if eta := cp.DisplayMetrics.EstimatedCompletionAt; eta != nil {
			return etaReading{at: time.Now(), eta: *eta, sent: cp.SentCount}, nil
		}
		if time.Now().After(deadline) {
			return etaReading{}, fmt.Errorf("no estimatedCompletionAt a minute after submission (status %s)", cp.Status)
		}
	}
}

// followEstimate reads campaign id's estimate every etaEvery until its n messages are sent,
// returning first and every reading after it. A failed message or a campaign that ended short
// fails the run.
func followEstimate(ctx context.Context, c *apiClient, id string, n int, first etaReading) ([]etaReading, error) {
	readings := []etaReading{first}
	next := first.at.Add(etaEvery)
	for ; ; time.Sleep(200 * time.Millisecond) {
		cp, err := readETA(ctx, c, id)
		if err != nil {
			return nil, err
		}
		switch {
		case cp.FailedCount > 0:
			return nil, fmt.Errorf("eta-e2e: %d messages failed", cp.FailedCount)
		case cp.Status == "failed" || cp.Status == "canceled":
			return nil, fmt.Errorf("eta-e2e: the campaign %s", cp.Status)
		case cp.SentCount >= n:
			return readings, nil
		}
		if now := time.Now(); !now.Before(next) && cp.DisplayMetrics.EstimatedCompletionAt != nil {
			readings = append(readings, etaReading{at: now, eta: *cp.DisplayMetrics.EstimatedCompletionAt, sent: cp.SentCount})
			next = next.Add(etaEvery)
		}
	}
}

// lastDispatch is when the campaign's last message was let go to the carrier, from the
// product's message log in database db (read-only).
func lastDispatch(ctx context.Context, db, org, campaign string) (time.Time, error) {
	dsn, err := ensureDatabase(ctx, db, false)
	if err != nil {
		return time.Time{}, err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return time.Time{}, err
	}
	defer conn.Close(ctx)
	var at time.Time
	if err := conn.QueryRow(ctx, `SELECT max(dispatched_at) FROM messaging.messages
		WHERE organization_id = $1 AND source_kind = 'campaign' AND source_id = $2`, org, campaign).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("last dispatch: %w", err)
	}
	return at, nil
}
