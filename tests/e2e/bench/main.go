// Command bench (make bench) measures, first, the contacts list through the whole stack against the
// same SQL run through raw pgx on the same database, in the same run: 1,000,000 contacts across
// organizations, 200,000 of them in the organization under test. It prints medians, p99s and
// the ratio gateway/raw for page 1, a deep cursor page, a tag AND filter and a 4-letter fuzzy
// search. The seeded database is kept (chorus_bench) and reused unless -reseed is given.
// Then messaging (messaging.go): reply latency through the gateway against the carrier call
// alone, and the dispatch rate of queued messages against the per-number throttle. Then a
// campaign's fan-out to 1,000,000 contacts against a raw COPY of its message rows (fanout.go).
// Then polls (polls.go): answers through the inbound webhook, webhook to next question at the
// carrier. Then analytics (analytics.go): every endpoint for the largest organization against
// the raw GROUP BY of its message rows, and the ingest rate of events into the rollups. Then
// webhooks (webhooks.go): the delivery rate of inbound messages' events to a local receiver.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/sqllike"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/stack"
)

// listColumns are the columns the contacts service selects for a list page.
const listColumns = `id, organization_id, phone, email, first_name, last_name, address, city, state, zip,
		tags, is_textable, is_opted_in, opted_out_at, timezone, is_starred, is_archived, created_at, updated_at`

const (
	bigOrgName = "bench-big"
	benchUser  = "bench-user"
	perSmall   = 20000
)

// fuzzyTerms are 4-letter searches, some of them misspelt, rotated through the fuzzy case.
var fuzzyTerms = []string{"mari", "jame", "wils", "tayl", "ande", "mart", "jaso", "rodr", "smih", "garc", "lopz", "davs"}

func main() {
	total := flag.Int("total", 1_000_000, "contacts in the database")
	big := flag.Int("big", 200_000, "contacts in the organization under test")
	n := flag.Int("n", 300, "timed requests per case and side")
	dbName := flag.String("db", "chorus_bench", "database to seed and keep")
	reseed := flag.Bool("reseed", false, "drop and seed the database again")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the timed requests to this file")
	suite := flag.String("suite", "all", "contacts, load (the concurrent case alone), hops (page 1's time hop by hop, alone), e2e (every *-e2e case), campaign-e2e, pool-e2e, eta-e2e, list-e2e, create-e2e, import-e2e, messaging, fanout, polls, analytics, webhooks or all")
	pollParticipants := flag.Int("pollparticipants", 10_000, "participants of the polls case")
	pollQuestions := flag.Int("pollquestions", 5, "questions of the polls case")
	pollConc := flag.Int("pollconc", 32, "answer webhooks in flight at once in the polls case")
	conns := flag.Int("conns", 32, "connections of the concurrent case, on each side")
	loadFor := flag.Duration("loadtime", 10*time.Second, "how long the concurrent case runs on each side")
	dispatchCount := flag.Int("dispatch", 20_000, "queued messages in the dispatch case")
	numbers := flag.Int("numbers", 10, "sending numbers in the dispatch and paced cases")
	rate := flag.Int("rate", 1000, "messages per second per sending number in the dispatch case (1000: the limits out of the way)")
	paced := flag.String("paced", "1,10", "rates (messages per second per number) of the paced cases, run after the dispatch case; \"\" for none")
	pacedFor := flag.Duration("pacedfor", 30*time.Second, "how long each paced case sends")
	bulk := flag.Bool("bulk", true, "the dispatch and paced cases queue as campaigns do, in bulk batches; false creates every message and job at once")
	fanoutContacts := flag.Int("contacts", 1_000_000, "contacts the fan-out case sends one campaign to")
	aMessages := flag.Int("amessages", 10_000_000, "messages of the analytics case, a fifth of them in the largest organization")
	aOrgs := flag.Int("aorgs", 1000, "organizations of the analytics case")
	aContacts := flag.Int("acontacts", 200_000, "contacts of the analytics case's largest organization")
	aIngest := flag.Int("ingest", 30_000, "events of the analytics ingest case")
	whOrgs := flag.Int("whorgs", 10, "organizations of the webhooks case")
	whEndpoints := flag.Int("whendpoints", 5, "endpoints of each organization in the webhooks case")
	whEvents := flag.Int("whevents", 4000, "events of the webhooks case (each delivered to every endpoint of its organization)")
	listContacts := flag.Int("listcontacts", 5000, "contacts of the list-e2e case's organization")
	e2eFor := flag.Duration("e2etime", 30*time.Second, "how long each side of the list-e2e and create-e2e cases runs")
	e2eRecipients := flag.String("recipients", "20000", "contacts of the campaign-e2e case, comma separated for several runs")
	importRows := flag.Int("importrows", 1_000_000, "rows of the import-e2e case's file")
	e2eNumbers := flag.String("e2enumbers", "1,10", "sending numbers of the campaign-e2e case (a campaign from each, to its share of the contacts), comma separated for several runs")
	poolRecipients := flag.Int("poolrecipients", 10_000, "contacts of the pool-e2e case's campaign (one in 20 of them texted a pool number first)")
	poolNumbers := flag.Int("poolnumbers", 10, "numbers of the pool-e2e case's pool")
	poolRate := flag.Int("poolrate", 10, "messages per second of each pool-e2e number (chorusctl number add --mps)")
	etaRecipients := flag.Int("etarecipients", 3000, "contacts of the eta-e2e case's campaign, spread evenly over -etazones")
	etaZones := flag.String("etazones", "America/New_York,America/Chicago,America/Denver,America/Los_Angeles", "the eta-e2e case's contacts' zones, comma separated (the first is the campaign's)")
	etaNumbers := flag.Int("etanumbers", 4, "numbers of the eta-e2e case's pool")
	etaRate := flag.Int("etarate", 5, "messages per second of each eta-e2e number")
	flag.Parse()
	// The fan-out case profiles its fan-out alone.
	if *cpuProfile != "" && *suite != "fanout" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	var err error
	if *suite == "all" || *suite == "e2e" || *suite == "campaign-e2e" {
	runs:
		for _, k := range strings.Split(*e2eNumbers, ",") {
			var sizes []perMessage
			for _, r := range strings.Split(*e2eRecipients, ",") {
				var n, numbers int
				var run perMessage
				if n, err = strconv.Atoi(r); err == nil {
					if numbers, err = strconv.Atoi(k); err == nil {
						run, err = benchCampaignE2E(ctx, n, numbers)
					}
				}
				if err != nil {
					break runs
				}
				sizes = append(sizes, run)
			}
			printFlatness(sizes)
		}
	}
	if err == nil && (*suite == "all" || *suite == "e2e" || *suite == "pool-e2e") {
		err = benchPoolE2E(ctx, *poolRecipients, *poolNumbers, *poolRate)
	}
	if err == nil && (*suite == "all" || *suite == "e2e" || *suite == "eta-e2e") {
		err = benchETAE2E(ctx, *etaRecipients, *etaZones, *etaNumbers, *etaRate)
	}
	if err == nil && (*suite == "all" || *suite == "e2e" || *suite == "list-e2e") {
		err = benchListE2E(ctx, *listContacts, *conns, *e2eFor)
	}
	if err == nil && (*suite == "all" || *suite == "e2e" || *suite == "create-e2e") {
		err = benchCreateE2E(ctx, *e2eFor)
	}
	if err == nil && (*suite == "all" || *suite == "e2e" || *suite == "import-e2e") {
		err = benchImportE2E(ctx, *importRows)
	}
	if err == nil && (*suite == "all" || *suite == "contacts" || *suite == "load" || *suite == "hops") {
		err = run(ctx, contactsRun{total: *total, big: *big, n: *n, dbName: *dbName, reseed: *reseed,
			conns: *conns, loadFor: *loadFor, loadOnly: *suite == "load", hopsOnly: *suite == "hops"})
	}
	if err == nil && (*suite == "all" || *suite == "messaging") {
		err = benchReply(ctx, *n)
		if err == nil {
			err = benchDispatch(ctx, *dispatchCount, *numbers, *rate, *bulk)
		}
		for _, r := range strings.Split(*paced, ",") {
			if err != nil || r == "" {
				break
			}
			var perNumber int
			if perNumber, err = strconv.Atoi(r); err == nil {
				err = benchDispatch(ctx, *numbers*perNumber*int(pacedFor.Seconds()), *numbers, perNumber, *bulk)
			}
		}
	}
	if err == nil && (*suite == "all" || *suite == "fanout") {
		profile := ""
		if *suite == "fanout" {
			profile = *cpuProfile
		}
		err = benchFanout(ctx, *fanoutContacts, profile)
	}
	if err == nil && (*suite == "all" || *suite == "polls") {
		err = benchPolls(ctx, *pollParticipants, *pollQuestions, *pollConc)
	}
	if err == nil && (*suite == "all" || *suite == "analytics") {
		err = benchAnalytics(ctx, analyticsRun{messages: *aMessages, orgs: *aOrgs, contacts: *aContacts, ingest: *aIngest, n: *n})
	}
	if err == nil && (*suite == "all" || *suite == "webhooks") {
		err = benchWebhooks(ctx, webhooksRun{orgs: *whOrgs, endpoints: *whEndpoints, events: *whEvents})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// contactsRun is what the contacts suite was asked for.
type contactsRun struct {
	total, big, n int
	dbName        string
	reseed        bool
	conns         int
	loadFor       time.Duration
	loadOnly      bool // only the concurrent case
	hopsOnly      bool // only the hop-by-hop timing of page 1
}

func run(ctx context.Context, cr contactsRun) error {
	total, big, n := cr.total, cr.big, cr.n
	dsn, err := ensureDatabase(ctx, cr.dbName, cr.reseed)
	if err != nil {
		return err
	}
	keyDir, err := os.MkdirTemp("", "chorus-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(keyDir)
	vars := map[string]string{
		"CHORUS_DATABASE_URL": dsn, "CHORUS_DEV_JWKS_ADDR": "127.0.0.1:0",
		"CHORUS_DEV_KEY": filepath.Join(keyDir, "key.pem"), "CHORUS_RATE_LIMIT": "1000000", "CHORUS_RATE_BURST": "1000000",
	}
	for _, svc := range registry.All {
		vars[svc.AddrVar] = "127.0.0.1:0" // free ports: a second bench or a dev stack may be running
	}
	r := envconfig.FromMap(vars)
	cfg := stack.ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := stack.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()

	pool, err := pgxpool.New(ctx, dsn+"&search_path=contacts,public")
	if err != nil {
		return err
	}
	defer pool.Close()
	org, err := seed(ctx, st, pool, total, big)
	if err != nil {
		return err
	}
	tok, err := st.Key.Sign(benchUser, 2*time.Hour)
	if err != nil {
		return err
	}
	c := &apiClient{base: st.HTTPURL, token: tok, org: org, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	rawSQL := `SELECT ` + listColumns + ` FROM contacts WHERE organization_id = $1 `
	order := ` ORDER BY updated_at DESC, id DESC LIMIT 51`
	fmt.Printf("\ncontacts list, %d contacts in the database, %d in the organization\n", total, big)
	if cr.hopsOnly {
		return benchHops(ctx, st, c, pool, n, rawSQL+order, []any{org})
	}
	if err := benchConcurrent(ctx, c, dsn, cr.conns, cr.loadFor, rawSQL+order, []any{org}); err != nil {
		return err
	}
	if cr.loadOnly {
		return nil
	}

	deep, err := c.walk(ctx, big*3/4)
	if err != nil {
		return err
	}
	cases := []benchCase{
		{name: "list page 1",
			api: func(int) string { return "/api/contacts?limit=50" },
			sql: func(int) (string, []any) { return rawSQL + order, []any{org} }},
		{name: fmt.Sprintf("deep cursor page (row %d)", deep.depth),
			api: func(int) string { return "/api/contacts?limit=50&cursor=" + url.QueryEscape(deep.cursor) },
			sql: func(int) (string, []any) {
				return rawSQL + `AND (updated_at, id) < ($2, $3)` + order, []any{org, deep.at, deep.id}
			}},
		{name: "tags AND (tag1,tag2)",
			api: func(int) string { return "/api/contacts?limit=50&tagsLogic=AND&tags=tag1,tag2" },
			sql: func(int) (string, []any) {
				return rawSQL + `AND tags @> $2` + order, []any{org, []string{"tag1", "tag2"}}
			}},
		{name: "fuzzy search, 4 letters",
			api: func(i int) string { return "/api/contacts?limit=50&search=" + fuzzyTerms[i%len(fuzzyTerms)] },
			sql: func(i int) (string, []any) {
				t := fuzzyTerms[i%len(fuzzyTerms)]
				return rawSQL + `AND (search_text ILIKE $2 ESCAPE '\' OR $3::text <% name_text)` + order, []any{org, sqllike.Contains(t), t}
			}},
	}

	fmt.Printf("\nsingle client, %d timed requests a side\n", n)
	fmt.Printf("%-34s %12s %12s %12s %12s %8s\n", "case", "gateway p50", "gateway p99", "raw p50", "raw p99", "ratio")
	results := map[string]timing{}
	for _, bc := range cases {
		api, err := measure(n, func(i int) error { return c.get(ctx, bc.api(i)) })
		if err != nil {
			return fmt.Errorf("%s via gateway: %w", bc.name, err)
		}
		raw, err := measure(n, func(i int) error { q, args := bc.sql(i); return rawQuery(ctx, pool, q, args) })
		if err != nil {
			return fmt.Errorf("%s raw: %w", bc.name, err)
		}
		results[bc.name] = api
		fmt.Printf("%-34s %12s %12s %12s %12s %7.2fx\n", bc.name, api.p50, api.p99, raw.p50, raw.p99, float64(api.p50)/float64(raw.p50))
	}
	p1, dp := results[cases[0].name], results[cases[1].name]
	fmt.Printf("\ndeep cursor page / page 1 (gateway p50): %.2fx (target: about 1x)\n", float64(dp.p50)/float64(p1.p50))
	fz := results[cases[3].name]
	fmt.Printf("fuzzy search p99 through the gateway: %s (target: under 50ms)\n", fz.p99)
	return nil
}

type benchCase struct {
	name string
	api  func(i int) string
	sql  func(i int) (string, []any)
}

type timing struct{ p50, p99 time.Duration }

// measure runs f 20 times to warm up, then n timed times, sequentially.
func measure(n int, f func(i int) error) (timing, error) {
	for i := range 20 {
		if err := f(i); err != nil {
			return timing{}, err
		}
	}
	d := make([]time.Duration, n)
	for i := range n {
		start := time.Now()
		if err := f(i); err != nil {
			return timing{}, err
		}
		d[i] = time.Since(start)
	}
	return timingOf(d), nil
}

// measurePair times n calls of a and n of b taken in turn, after a warm-up of each, so a
// machine that slows down or speeds up meanwhile moves both sides alike.
func measurePair(n int, a, b func(i int) error) (timing, timing, error) {
	for i := range 20 {
		if err := a(i); err != nil {
			return timing{}, timing{}, err
		}
		if err := b(i); err != nil {
			return timing{}, timing{}, err
		}
	}
	da, db := make([]time.Duration, n), make([]time.Duration, n)
	for i := range n {
		for _, side := range []struct {
			f func(int) error
			d []time.Duration
		}{{a, da}, {b, db}} {
			start := time.Now()
			if err := side.f(i); err != nil {
				return timing{}, timing{}, err
			}
			side.d[i] = time.Since(start)
		}
	}
	return timingOf(da), timingOf(db), nil
}

func timingOf(d []time.Duration) timing {
	p50, p99 := percentiles(d)
	return timing{p50: p50.Round(time.Microsecond), p99: p99.Round(time.Microsecond)}
}

// rawQuery runs the SQL and reads every value, as the service does.
func rawQuery(ctx context.Context, pool *pgxpool.Pool, q string, args []any) error {
	rows, err := pool.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if _, err := rows.Values(); err != nil {
			return err
		}
	}
	return rows.Err()
}

type apiClient struct {
	base, token, org string
	http             *http.Client
}

func (c *apiClient) fetch(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("x-organization-id", c.org)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, res.StatusCode, b)
	}
	return b, nil
}

func (c *apiClient) get(ctx context.Context, path string) error {
	_, err := c.fetch(ctx, path)
	return err
}

type position struct {
	cursor string
	depth  int
	at     time.Time
	id     string
}

// walk pages through the organization by cursor, 200 at a time, until depth rows are behind.
func (c *apiClient) walk(ctx context.Context, depth int) (position, error) {
	var p position
	for p.depth < depth {
		path := "/api/contacts?limit=200"
		if p.cursor != "" {
			path += "&cursor=" + url.QueryEscape(p.cursor)
		}
		b, err := c.fetch(ctx, path)
		if err != nil {
			return p, err
		}
		var page struct {
			Contacts []struct {
				ID        string    `json:"id"`
				UpdatedAt time.Time `json:"updatedAt"`
			} `json:"contacts"`
			Cursor *string `json:"cursor"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return p, err
		}
		if page.Cursor == nil || len(page.Contacts) == 0 {
			return p, fmt.Errorf("the organization has only %d contacts", p.depth+len(page.Contacts))
		}
		last := page.Contacts[len(page.Contacts)-1]
		p = position{cursor: *page.Cursor, depth: p.depth + len(page.Contacts), at: last.UpdatedAt, id: last.ID}
	}
	return p, nil
}

// ensureDatabase creates dbName (dropping it first when reseed) and returns its DSN.
func ensureDatabase(ctx context.Context, dbName string, reseed bool) (string, error) {
	admin, err := pgx.Connect(ctx, pgtest.AdminDSN())
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	if reseed {
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{dbName}.Sanitize()+" WITH (FORCE)"); err != nil {
			return "", err
		}
	}
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, dbName).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{dbName}.Sanitize()); err != nil {
			return "", err
		}
	}
	u, err := url.Parse(pgtest.AdminDSN())
	if err != nil {
		return "", err
	}
	u.Path = "/" + dbName
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// seed makes the organizations through the orgs API and the contacts in bulk SQL, once; it
// returns the id of the organization under test.
func seed(ctx context.Context, st *stack.Stack, pool *pgxpool.Pool, total, big int) (string, error) {
	var org string
	err := pool.QueryRow(ctx, `SELECT id::text FROM orgs.organizations WHERE name = $1`, bigOrgName).Scan(&org)
	if err == nil {
		return org, nil
	}
	conn, err := grpc.NewClient(st.Addr(registry.Orgs), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	orgs := orgsv1.NewOrgsServiceClient(conn)
	create := func(name string) (string, error) {
		res, err := orgs.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: name})
		return res.GetOrganization().GetId(), err
	}
	start := time.Now()
	fmt.Printf("seeding %d contacts (once; kept in the database for later runs)...\n", total)
	for i := 0; i < (total-big)/perSmall; i++ {
		id, err := create(fmt.Sprintf("bench-%03d", i))
		if err != nil {
			return "", err
		}
		if err := seedContacts(ctx, pool, id, perSmall); err != nil {
			return "", err
		}
	}
	org, err = create(bigOrgName)
	if err != nil {
		return "", err
	}
	if err := seedContacts(ctx, pool, org, big); err != nil {
		return "", err
	}
	if _, err := orgs.SetMembership(ctx, &orgsv1.SetMembershipRequest{OrganizationId: org, UserSubject: benchUser, Access: orgsv1.Access_ACCESS_READ}); err != nil {
		return "", err
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE contacts`); err != nil {
		return "", err
	}
	fmt.Printf("seeded in %s\n", time.Since(start).Round(time.Second))
	return org, nil
}

var firstNames = []string{"James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "William", "Elizabeth",
	"David", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen", "Maria", "Jose",
	"Jason", "Marie", "Carlos", "Ana", "Luis", "Sofia", "Daniel", "Emma", "Mark", "Olivia", "Paul", "Ava", "Steven", "Mia",
	"Andrew", "Isabella", "Kevin", "Marion"}

var lastNames = []string{"Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
	"Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee", "Perez",
	"Thompson", "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King",
	"Wright", "Scott", "Torres", "Nguyen", "Hill", "Flores"}

// seedContacts inserts n contacts for org: names from the lists, unique phones, two emails in
// three, ten tags each present with probability 1/4, textability and timestamps spread out.
func seedContacts(ctx context.Context, pool *pgxpool.Pool, org string, n int) error {
	_, err := pool.Exec(ctx, `
		INSERT INTO contacts (id, organization_id, phone, email, first_name, last_name, state, zip, tags,
		                      is_textable, created_at, updated_at)
		SELECT gen_random_uuid(), $1, '+1202' || lpad(i::text, 7, '0'),
		       CASE WHEN i % 3 = 0 THEN NULL ELSE lower(f || '.' || l || i || '@example.com') END,
		       f, l,
		       (ARRAY['CA','NY','TX','FL','WA','IL','PA','OH','GA','NC'])[1 + i % 10],
		       lpad((10000 + i % 90000)::text, 5, '0'),
		       ARRAY(SELECT 'tag' || k FROM generate_series(0, 9) k WHERE hashint4(i * 10 + k)::bigint & 3 = 0),
		       CASE i % 5 WHEN 0 THEN NULL WHEN 1 THEN false ELSE true END,
		       now() - make_interval(secs => i), now() - make_interval(secs => i) + make_interval(secs => hashint4(i)::bigint & 1023)
		FROM generate_series(1, $2) i,
		     LATERAL (SELECT ($3::text[])[1 + (hashint4(i)::bigint & 1023) % cardinality($3::text[])] AS f,
		                     ($4::text[])[1 + (hashint4(i + 7)::bigint & 1023) % cardinality($4::text[])] AS l) names`,
		org, n, firstNames, lastNames)
	if err != nil {
		return fmt.Errorf("seed %s: %w", org, err)
	}
	return nil
}
