package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/quiethours"
	"github.com/chorus-sms/chorus/pkg/registry"
	campaignsv1 "github.com/chorus-sms/chorus/proto/gen/go/campaigns/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
)

// fanoutMessage is the bench campaign's text: two merge fields, no URL (short links are
// another service call per distinct URL, not per recipient), one credit per recipient.
const fanoutMessage = "Hi {{firstName}} {{lastName}}, our spring sale starts Saturday at 9am: 20% off everything in store. Reply STOP to opt out"

// messageColumns are the columns messaging writes for a queued campaign message
// (store.InsertOutgoingMany), the baseline's COPY columns.
var messageColumns = []string{"id", "organization_id", "direction", "contact_phone", "our_number", "phone_number_id", "body",
	"media_urls", "is_mms", "status", "provider", "credits", "billable", "hold_id", "source_kind", "source_id", "dedupe_key",
	"quiet_hours_timezone", "recipient_timezone", "created_at", "thread_at"}

// benchFanout sends one campaign to n contacts of a paying organization and times its fan-out,
// from the submit to the campaign's move to sending (audience streamed from contacts and
// stored, each text rendered and priced, the hold placed, every message queued with messaging
// in bulk batches), against a raw pgx COPY of the same message rows into a table of the same
// shape (columns, constraints, indexes) in a scratch schema, in the same run. Messaging
// creates a bulk batch's message rows and dispatch jobs when the batch is due and its queue
// is short, that is as dispatch reaches them (the messaging suite's -bulk run times that
// path); here every recipient's own zone is one where it is night now, so quiet hours keep
// every batch waiting, and the dispatcher runs one worker. cpuProfile, when set, profiles the
// fan-out alone.
func benchFanout(ctx context.Context, n int, cpuProfile string) error {
	night, day, err := zones(time.Now())
	if err != nil {
		return err
	}
	carrier := fakeTwilio()
	defer carrier.Close()
	// Its own Redis database: another stack's events on the shared streams are not its work.
	ms, err := startMsgStack(ctx, "chorus_bench_fanout", carrier.URL, map[string]string{
		"CHORUS_DISPATCH_WORKERS": "1", "CHORUS_REDIS_URL": "redis://127.0.0.1:6379/13"})
	if err != nil {
		return err
	}
	defer ms.close()
	campaigns := campaignsv1.NewCampaignsServiceClient(ms.dial(ms.st.Addr(registry.Campaigns)))
	org, octx, err := ms.payingOrg(ctx, "bench-fanout", n)
	if err != nil {
		return err
	}
	if _, err := ms.messaging.AddNumber(ctx, &messagingv1.AddNumberRequest{OrganizationId: org, Number: "+16465550100"}); err != nil {
		return err
	}
	fmt.Printf("\nfan-out: seeding %d contacts (recipients' zone %s, campaign's %s)...\n", n, night, day)
	seedStart := time.Now()
	if _, err := seedTextable(ctx, ms.pool, org, n, night); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if _, err := ms.pool.Exec(ctx, `VACUUM ANALYZE contacts.contacts`); err != nil {
		return err
	}
	fmt.Printf("seeded in %s\n", time.Since(seedStart).Round(time.Second))
	// Both timed writes start from a checkpoint: the seed's WAL would otherwise force one
	// into the middle of whichever runs first.
	if _, err := ms.pool.Exec(ctx, `CHECKPOINT`); err != nil {
		return err
	}

	stopProfile, err := startProfile(cpuProfile)
	if err != nil {
		return err
	}
	cpu0, pg0 := cpuTime(), backendCPU("chorus_bench_fanout")
	start := time.Now()
	res, err := campaigns.CreateCampaign(octx, &campaignsv1.CreateCampaignRequest{Campaign: &campaignsv1.CampaignInput{
		Name: ptr("bench fan-out"), Message: ptr(fanoutMessage), Timezone: ptr(day),
		ContactFilter: &campaignsv1.ContactFilter{},
	}})
	if err != nil {
		stopProfile()
		return fmt.Errorf("submit: %w", err)
	}
	id := res.GetCampaign().GetId()
	queuedAt, err := awaitSending(ctx, ms, id, start)
	stopProfile()
	if err != nil {
		return err
	}
	cpu, pg := cpuTime()-cpu0, backendCPU("chorus_bench_fanout")-pg0
	took := queuedAt.Sub(start)
	if err := checkFanout(ctx, ms, org, id, n); err != nil {
		return err
	}
	var snoozed, batches int
	var stored string
	if err := ms.pool.QueryRow(ctx, `SELECT count(*) FROM messaging.river_job WHERE kind = 'messaging.send' AND attempted_at IS NOT NULL`).Scan(&snoozed); err != nil {
		return err
	}
	if err := ms.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM messaging.bulk_batches), pg_size_pretty(pg_total_relation_size('messaging.bulk_batches'))`).Scan(&batches, &stored); err != nil {
		return err
	}

	copyTook, err := copyBaseline(ctx, ms, id)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	fanRate, copyRate := float64(n)/took.Seconds(), float64(n)/copyTook.Seconds()
	fmt.Printf("%-44s %8.1fs %10.0f rows/s\n", "campaign fan-out, submit to sending", took.Seconds(), fanRate)
	fmt.Printf("%-44s stack %.1fs + PostgreSQL backends %.1fs (%.3f ms/row); dispatch jobs woken meanwhile: %d\n",
		"  CPU of the fan-out", cpu.Seconds(), pg.Seconds(), (cpu+pg).Seconds()*1000/float64(n), snoozed)
	fmt.Printf("%-44s %d bulk batches, %s\n", "  queued with messaging as", batches, stored)
	fmt.Printf("%-44s %8.1fs %10.0f rows/s\n", "raw pgx COPY of the same message rows", copyTook.Seconds(), copyRate)
	fmt.Printf("%-44s %8.3fx (target: 0.7x or more)\n", "ratio fan-out/COPY", fanRate/copyRate)
	return nil
}

// zones picks, among a spread of zones, one where it is night now and stays night for the next
// two hours (recipients: quiet hours hold their messages) and one where it is day for as long
// (the campaign's: an immediate submit is allowed).
func zones(now time.Time) (night, day string, err error) {
	for _, z := range []string{"UTC", "America/New_York", "America/Los_Angeles", "Asia/Tokyo", "Asia/Kolkata", "Europe/Berlin", "Australia/Sydney", "Pacific/Honolulu"} {
		loc, err := time.LoadLocation(z)
		if err != nil {
			return "", "", err
		}
		open, later := quiethours.Open(loc, now), quiethours.Open(loc, now.Add(2*time.Hour))
		switch {
		case night == "" && !open && !later:
			night = z
		case day == "" && open && later:
			day = z
		}
	}
	if night == "" || day == "" {
		return "", "", fmt.Errorf("no zone found where it is night (%q) or day (%q) for two hours", night, day)
	}
	return night, day, nil
}

// awaitSending waits until the campaign has moved to sending (every recipient queued with
// messaging) and returns when it did, by the database's clock of that move. It prints how long
// the campaign was pending (audience stored, hold placed) within it, to 100 ms.
func awaitSending(ctx context.Context, ms *msgStack, id string, start time.Time) (time.Time, error) {
	var resolved bool
	for last := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		var status string
		var at time.Time
		// The status alone, by key: counting the recipients every 100 ms took a core of
		// PostgreSQL from the fan-out it measures.
		err := ms.pool.QueryRow(ctx, `SELECT status, updated_at FROM campaigns.campaigns WHERE id = $1`, id).Scan(&status, &at)
		if err != nil {
			return time.Time{}, err
		}
		if !resolved && status != "pending" {
			resolved = true
			fmt.Printf("  pending (audience resolved, priced, held) for %.1fs\n", time.Since(start).Seconds())
		}
		switch status {
		case "sending", "completed":
			return at, nil
		case "failed", "paused", "draft":
			return time.Time{}, fmt.Errorf("campaign %s ended %s", id, status)
		}
		if time.Since(last) > 10*time.Second {
			last = time.Now()
			var recipients int
			if err := ms.pool.QueryRow(ctx, `SELECT count(*) FROM campaigns.recipients WHERE campaign_id = $1`, id).Scan(&recipients); err != nil {
				return time.Time{}, err
			}
			fmt.Printf("  %s, %d recipients stored (%s)\n", status, recipients, time.Since(start).Round(time.Second))
		}
	}
}

// queuedRows are the message rows a campaign ($1) queued with messaging, in messageColumns'
// order: those of its bulk batches, as messaging will create them when they are due (the
// conversion of its insertOutgoing), and any it created already.
const queuedRows = `SELECT t.id, b.organization_id, 'outgoing' AS direction, t.contact_phone, b.our_number, b.phone_number_id,
		t.body, b.media_urls, b.is_mms, 'queued' AS status, b.provider, t.credits, b.billable, b.hold_id, b.source_kind,
		b.source_id, t.dedupe_key, b.quiet_hours_timezone, nullif(t.recipient_timezone, '') AS recipient_timezone,
		b.created_at, b.created_at AS thread_at
	FROM messaging.bulk_batches b, unnest(b.ids, b.contact_phones, b.bodies, b.credits, b.dedupe_keys, b.recipient_timezones)
		AS t(id, contact_phone, body, credits, dedupe_key, recipient_timezone)
	WHERE b.source_kind = 'campaign' AND b.source_id = $1
	UNION ALL
	SELECT id, organization_id, direction, contact_phone, our_number, phone_number_id, body, media_urls, is_mms, status, provider,
		credits, billable, hold_id, source_kind, source_id, dedupe_key, quiet_hours_timezone, recipient_timezone, created_at, thread_at
	FROM messaging.messages WHERE source_id = $1`

// checkFanout verifies what the fan-out must have done: one message per contact queued under
// its dedupe key, and a hold equal to the sum of the recipients' prices.
func checkFanout(ctx context.Context, ms *msgStack, org, id string, n int) error {
	var messages, keys, recipients, priced, held int
	if err := ms.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT dedupe_key) FROM (`+queuedRows+`) q`, id).Scan(&messages, &keys); err != nil {
		return err
	}
	if err := ms.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(credits), 0) FROM campaigns.recipients WHERE campaign_id = $1`, id).Scan(&recipients, &priced); err != nil {
		return err
	}
	if err := ms.pool.QueryRow(ctx, `SELECT credits FROM billing.holds WHERE organization_id = $1 AND id = $2`, org, id).Scan(&held); err != nil {
		return fmt.Errorf("hold: %w", err)
	}
	// A batch may be handed to messaging twice (a send's run ended by its budget while the
	// batch was in flight): its messages are created once, by dedupe key.
	if keys != n || messages < n || recipients != n || held != priced || priced < n {
		return fmt.Errorf("fan-out of %d contacts: %d messages (%d dedupe keys), %d recipients, hold %d for %d credits rendered", n, messages, keys, recipients, held, priced)
	}
	return nil
}

// copyBaseline copies the campaign's message rows (queuedRows, one per dedupe key), read into memory first, into an empty table
// of the same shape (LIKE ... INCLUDING ALL: defaults, checks, the same indexes) with one pgx
// CopyFrom, and returns how long the COPY took.
func copyBaseline(ctx context.Context, ms *msgStack, campaign string) (time.Duration, error) {
	if _, err := ms.pool.Exec(ctx, `DROP SCHEMA IF EXISTS bench_copy CASCADE; CREATE SCHEMA bench_copy;
		CREATE TABLE bench_copy.messages (LIKE messaging.messages INCLUDING ALL)`); err != nil {
		return 0, err
	}
	rows, err := ms.pool.Query(ctx, `SELECT DISTINCT ON (dedupe_key) * FROM (`+queuedRows+`) q`, campaign)
	if err != nil {
		return 0, err
	}
	var all [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			rows.Close()
			return 0, err
		}
		all = append(all, v)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if _, err := ms.pool.Exec(ctx, `CHECKPOINT`); err != nil {
		return 0, err
	}
	start := time.Now()
	copied, err := ms.pool.CopyFrom(ctx, pgx.Identifier{"bench_copy", "messages"}, messageColumns, pgx.CopyFromRows(all))
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	if int(copied) != len(all) {
		return 0, fmt.Errorf("copied %d of %d rows", copied, len(all))
	}
	return took, nil
}

// backendCPU is the CPU time used so far by the PostgreSQL backends serving database db
// (processes titled "postgres: <user> <db> ..."; Linux clock ticks of 10 ms). A backend that
// exited since is not counted: the stack's pools keep theirs for the run.
func backendCPU(db string) time.Duration {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var ticks int64
	for _, d := range dirs {
		title, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.HasPrefix(string(title), "postgres: ") || !strings.Contains(string(title), " "+db+" ") {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// Fields after the parenthesized command: state is the 3rd field, utime the 14th, stime the 15th.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// startProfile starts a CPU profile into path ("" none) and returns its stop.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// cpuTime is the CPU time (user and system) this process, the whole stack, has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ptr[T any](v T) *T { return &v }
