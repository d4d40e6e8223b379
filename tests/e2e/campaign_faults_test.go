package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/servetest"
)

// faultContactsVar sets the audience of TestCampaignSurvivesKilledProcesses: 2,000 by default
// (make test), 20,000 in `make faults`, the figure. A fortieth of it texts STOP
// mid-send (500 of 20,000).
const faultContactsVar = "CHORUS_E2E_FAULT_CONTACTS"

// faultSeedVar replays the random moments of a logged run.
const faultSeedVar = "CHORUS_E2E_FAULT_SEED"

// campaignMarker starts every campaign text, telling the campaign's messages at the carrier
// from the STOP confirmations.
const campaignMarker = "Fault drill"

// The campaigns and messaging services run in processes of their own, SIGKILLed at random
// moments of a campaign's fan-out and dispatch and restarted, while the gateway, orgs,
// contacts and billing stay up; contacts text STOP while it sends. Every contact gets exactly
// one message unless it opted out first, none is handed to the carrier after a contact's STOP
// was acknowledged, the credits debited are the messages the carrier took, the hold is
// settled and the campaign completes with counters that add up.
//
// A message a killed messaging had claimed is looked up at the carrier once the carrier call
// window has passed (CHORUS_CARRIER_CALL_TIMEOUT twice): recorded sent if the carrier took
// it, else queued again and sent. So no message ends CARRIER_OUTCOME_UNKNOWN: none is lost.
func TestCampaignSurvivesKilledProcesses(t *testing.T) {
	size := 2000
	if v := os.Getenv(faultContactsVar); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, faultContactsVar)
		size = n
	}
	stops := size / 40
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(faultSeedVar); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, faultSeedVar)
		seed = s
	}
	t.Logf("%d contacts, %d STOPs, seed %d (%s=%d replays the choices)", size, stops, seed, faultSeedVar, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	started := time.Now()

	const token = "twilio-fault-token"
	hooks := &http.Client{Timeout: 10 * time.Second, Transport: baseTransport}
	carrier := newTwilioCarrier(t, token, hooks, 4)
	gatewayAddr := servetest.ClosedAddr(t)
	shared := twilioStack(carrier.URL, token, map[string]string{
		"CHORUS_HTTP_ADDR":      gatewayAddr,
		"CHORUS_MESSAGING_ADDR": servetest.ClosedAddr(t),
		"CHORUS_CAMPAIGNS_ADDR": servetest.ClosedAddr(t),
		"CHORUS_NUMBER_RATE":    "100000", // the dispatcher, not the throttle, bounds the test
		// A message claimed by a killed process is looked up at the carrier 10 s after its
		// claim, and none may be failed for want of an answer.
		"CHORUS_CARRIER_CALL_TIMEOUT": "5s",
		"CHORUS_SENDING_TIMEOUT":      "1h",
	})
	shared["CHORUS_REDIS_URL"], _ = redistest.New(t)
	shared["CHORUS_DATABASE_URL"] = stackDB.NewDatabase(t)
	local := map[string]string{"CHORUS_STACK_SERVICES": "orgs,contacts,billing,gateway"}
	for k, v := range shared {
		local[k] = v
	}
	e := newMsgEnv(t, local)
	procs := map[string]*child{}
	for _, svc := range []registry.Service{registry.Messaging, registry.Campaigns} {
		vars := []string{childEnv + "=1", "CHORUS_STACK_SERVICES=" + svc.Name}
		for k, v := range shared {
			vars = append(vars, k+"="+v)
		}
		for _, peer := range []registry.Service{registry.Orgs, registry.Contacts, registry.Billing} {
			vars = append(vars, peer.AddrVar+"="+e.st.Addr(peer))
		}
		procs[svc.Name] = &child{t: t, vars: vars}
		procs[svc.Name].start()
		t.Cleanup(procs[svc.Name].kill)
	}
	ctx := context.Background()
	db, err := pgxpool.New(ctx, shared["CHORUS_DATABASE_URL"])
	require.NoError(t, err)
	t.Cleanup(db.Close)

	const number = "+13125550100"
	credits := int32(size + size/10)
	tn := e.newTenant(number, credits)
	zone := zoneWhere(12)
	phones := seedAudience(t, db, tn.org, size, zone)
	t.Logf("stack up and %d contacts seeded in %s", size, time.Since(started).Round(time.Millisecond))

	submitted := time.Now()
	id := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Fault drill", "message": campaignMarker + " for {{firstName}}: doors open at 9.",
		"contactFilter": map[string]any{"tags": []string{"drill"}}, "timezone": zone,
	}), http.StatusCreated).str("id")

	sentToCampaign := func() map[string][]time.Time {
		out := map[string][]time.Time{}
		for _, m := range carrier.messages() {
			if strings.HasPrefix(m.Body, campaignMarker) {
				out[m.To] = append(out[m.To], m.At)
			}
		}
		return out
	}
	count := func(q string) func() int {
		return func() int {
			var n int
			require.NoError(t, db.QueryRow(ctx, q, id).Scan(&n))
			return n
		}
	}
	stages := []struct {
		name     string
		progress func() int
	}{
		{"storing recipients", count(`SELECT count(*) FROM campaigns.recipients WHERE campaign_id = $1`)},
		{"queueing in messaging", count(`SELECT count(*) FROM messaging.messages WHERE source_kind = 'campaign' AND source_id = $1::text`)},
		{"dispatching", func() int { return len(sentToCampaign()) }},
	}

	// STOPs: a fortieth of the audience, each from a contact the campaign has not reached yet,
	// spread over the dispatch; each STOP's moment is when its webhook answered 200.
	var mu sync.Mutex
	stoppedAt := map[string]time.Time{}
	stopPicks := rand.New(rand.NewPCG(rng.Uint64(), 0))
	var stopping sync.WaitGroup
	stopping.Go(func() {
		for i := range stops {
			for stages[2].progress() < (i+1)*size*8/(10*(stops+1)) {
				time.Sleep(10 * time.Millisecond)
			}
			sent := sentToCampaign()
			mu.Lock()
			var from string
			for from == "" || sent[from] != nil || !stoppedAt[from].IsZero() {
				from = phones[stopPicks.IntN(len(phones))]
			}
			mu.Unlock()
			stopping.Go(func() { // the STOPs of a killed messaging's downtime arrive together after it
				form := url.Values{"MessageSid": {newSID()}, "From": {from}, "To": {number}, "Body": {"STOP"}, "AccountSid": {"ACe2e"}}
				for {
					status, err := postSigned(ctx, hooks, token, e.st.PublicURL+"/webhooks/twilio/inbound", form)
					if err == nil && status == http.StatusOK {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				mu.Lock()
				stoppedAt[from] = time.Now()
				mu.Unlock()
			})
		}
	})

	// Kills: one while recipients are stored, one while they are queued, four at random points
	// of the dispatch; each takes campaigns, messaging or both, restarted after up to a second.
	type kill struct {
		stage int
		at    int
		procs []string
	}
	kills := []kill{{stage: 0, procs: []string{"campaigns"}}, {stage: 1, procs: []string{"campaigns", "messaging"}}}
	for range 4 {
		kills = append(kills, kill{stage: 2, procs: [][]string{{"campaigns"}, {"messaging"}, {"campaigns", "messaging"}}[rng.IntN(3)]})
	}
	for i := range kills {
		kills[i].at = size/20 + rng.IntN(size*8/10)
	}
	slices.SortStableFunc(kills, func(a, b kill) int { return (a.stage*size + a.at) - (b.stage*size + b.at) })
	for _, k := range kills {
		for k.stage < 2 && stages[k.stage].progress() < k.at && stages[k.stage+1].progress() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		for k.stage == 2 && stages[2].progress() < k.at {
			time.Sleep(5 * time.Millisecond)
		}
		for _, name := range k.procs {
			procs[name].kill()
		}
		t.Logf("%s: killed %v while %s (at %d of %d; aimed at %d)", time.Since(submitted).Round(time.Millisecond),
			k.procs, stages[k.stage].name, stages[k.stage].progress(), size, k.at)
		time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
		for _, name := range k.procs {
			procs[name].start() // River's rescuer runs the killed process's jobs again (jobs.RescueAfter)
		}
	}
	stopping.Wait()

	done := tn.awaitStatus(id, "completed", time.Duration(size/10)*time.Second+2*time.Minute)
	t.Logf("completed %s after submission", time.Since(submitted).Round(time.Millisecond))
	carrier.pending.Wait()
	sent := sentToCampaign()

	// Exactly once to every contact that did not opt out first; nothing after a STOP.
	lost, twice, afterStop, refused := 0, 0, 0, 0
	fate := func(phone string) string { // what messaging recorded of the campaign's message to phone
		var status, code string
		var requeues int
		require.NoError(t, db.QueryRow(ctx, `SELECT status, coalesce(error_code, ''), requeues FROM messaging.messages
			WHERE source_id = $1 AND contact_phone = $2`, id, phone).Scan(&status, &code, &requeues))
		return fmt.Sprintf("%s %s, requeued %d times", status, code, requeues)
	}
	for _, p := range phones {
		at, stop := sent[p], stoppedAt[p]
		switch {
		case len(at) > 1:
			twice++
			t.Errorf("%s was sent %d messages (messaging: %s)", p, len(at), fate(p))
		case len(at) == 1 && !stop.IsZero() && at[0].After(stop):
			afterStop++
			t.Errorf("%s was sent a message %s after its STOP was acknowledged", p, at[0].Sub(stop))
		case len(at) == 0 && stop.IsZero():
			lost++
			t.Errorf("%s, never opted out, got no message (messaging: %s)", p, fate(p))
		case len(at) == 0:
			refused++ // opted out first: withdrawn at dispatch
		}
	}
	var requeued int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM messaging.messages WHERE source_id = $1 AND requeues > 0`, id).Scan(&requeued))
	t.Logf("carrier: campaign messages to %d contacts; %d STOPs, %d of them before the contact's message; "+
		"%d messages claimed by a killed messaging, not found at the carrier and queued again", len(sent), len(stoppedAt), refused, requeued)
	require.Zero(t, lost+twice+afterStop, "lost %d, sent twice %d, sent after STOP %d", lost, twice, afterStop)

	// The counters add up; each message the carrier took was debited once; the hold is settled.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if done = tn.getCampaign(id); int(done.num("sentCount")) == len(sent) && done.num("queuedCount") == 0 {
			break
		}
	}
	rows, err := db.Query(ctx, `SELECT status || ' ' || count(*) FROM campaigns.recipients WHERE campaign_id = $1 GROUP BY status`, id)
	require.NoError(t, err)
	byStatus, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.EqualValues(t, len(sent), done.num("sentCount"), "the messages the carrier took (recipients: %v)", byStatus)
	assert.Zero(t, done.num("queuedCount"), "recipients: %v", byStatus)
	var withdrawn int
	require.NoError(t, db.QueryRow(ctx, `SELECT withdrawn_count FROM campaigns.campaigns WHERE id = $1`, id).Scan(&withdrawn))
	assert.EqualValues(t, size, done.num("totalCount"))
	assert.Zero(t, done.num("failedCount"), "no outcome left unknown (a contact who opted out before its message is withdrawn, not failed)")
	assert.EqualValues(t, refused, withdrawn, "the messages of contacts who opted out first were withdrawn")
	assert.EqualValues(t, size, int(done.num("sentCount")+done.num("failedCount"))+withdrawn, "sent + failed + withdrawn = total")
	b := &bulkEnv{msgEnv: e, dsn: shared["CHORUS_DATABASE_URL"]}
	eventually(t, 30*time.Second, "the hold settled", func() bool { return b.ledger(tn.org).held == 0 })
	l := b.ledger(tn.org)
	debited := 0
	for _, n := range l.debits {
		debited += n
	}
	assert.Equal(t, len(sent), debited, "credits debited = messages the carrier took")
	assert.Equal(t, int(credits)-len(sent), l.available, "the balance is the grant less the messages sent")
	assert.Equal(t, 1, l.holdRows, "one hold for the campaign")
	t.Logf("whole test %s", time.Since(started).Round(time.Millisecond))
}

// seedAudience inserts n textable, opted-in contacts tagged "drill" in zone into org, in one
// statement, and returns their phones: the audience of a campaign, as a bulk import would
// leave it. Ten more are tagged but opted out, and must get nothing.
func seedAudience(t *testing.T, db *pgxpool.Pool, org string, n int, zone string) []string {
	t.Helper()
	ctx := context.Background()
	_, err := db.Exec(ctx, `
		INSERT INTO contacts.contacts (id, organization_id, phone, first_name, tags, is_textable, is_opted_in, opted_out_at, timezone)
		SELECT gen_random_uuid(), $1, '+1202' || (5550000 + i), 'Ada' || i, '{drill}', true, i <= $2, CASE WHEN i > $2 THEN now() END, $3
		FROM generate_series(1, $2 + 10) i`, org, n, zone)
	require.NoError(t, err)
	rows, err := db.Query(ctx, `SELECT phone FROM contacts.contacts WHERE organization_id = $1 AND is_opted_in ORDER BY phone`, org)
	require.NoError(t, err)
	phones, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, phones, n)
	return phones
}
