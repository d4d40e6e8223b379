package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// e2eReaders is how many users read the list at once in list-e2e: the gateway limits each
// (organization, user) to its default rate, so the load comes from many users, as an
// organization's team and integrations would make it, not from one token the limit would
// answer 429 to.
const e2eReaders = 128

// wrkScript makes wrk send each request with the token of one of the readers in turn (a file
// of tokens, one a line) for the organization given.
const wrkScript = `
local tokens, org, i = {}, "", 0
function init(args)
  for line in io.lines(args[1]) do tokens[#tokens + 1] = line end
  org = args[2]
  i = math.random(#tokens)
end
function request()
  i = i % #tokens + 1
  return wrk.format("GET", nil, {["Authorization"] = "Bearer " .. tokens[i], ["x-organization-id"] = org})
end
`

// benchListE2E is GET /api/contacts?limit=50 as a user gets it: the stack as make run starts it,
// an organization of n contacts created through the API, wrk with conns connections on two
// threads for d against pgbench -M prepared running the page's own SELECT on the same
// database with as many clients, and one client's p50 on each side.
func benchListE2E(ctx context.Context, n, conns int, d time.Duration) error {
	p, org, day, err := startE2EOrg(ctx, "list", 11, "wrk", "pgbench")
	if err != nil {
		return err
	}
	defer p.stop()
	writers, err := p.writers(ctx, org, e2eCreators)
	if err != nil {
		return err
	}
	fmt.Printf("\nlist-e2e: %d contacts through POST /api/contacts...\n", n)
	if _, err := createContacts(ctx, writers, n, 212, day, "list"); err != nil {
		return err
	}
	readers, err := p.members(ctx, org, "bench-reader", "read", e2eReaders)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "chorus-list-e2e")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tokens, script := filepath.Join(dir, "tokens"), filepath.Join(dir, "tokens.lua")
	if err := os.WriteFile(tokens, []byte(strings.Join(readers, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(script, []byte(wrkScript), 0o600); err != nil {
		return err
	}
	// The page's SELECT with sorting off, as contacts runs it, so its plan walks the index in
	// the page's order whatever the statistics say (contacts' collectInIndexOrder); pgbench's
	// connections turn it off for the session, so each transaction is the SELECT alone.
	sql := `SELECT ` + listColumns + ` FROM contacts.contacts WHERE organization_id = '` + org.id + `' ORDER BY updated_at DESC, id DESC LIMIT 51`
	sqlFile := filepath.Join(dir, "page.sql")
	if err := os.WriteFile(sqlFile, []byte(sql+";\n"), 0o600); err != nil {
		return err
	}
	page := p.base + "/api/contacts?limit=50"
	// The sides take turns, so a machine busy with other work for a while slows both.
	var gw, raw float64
	for range e2eRounds {
		g, err := runWrk(ctx, conns, d/e2eRounds, script, page, tokens, org.id)
		if err != nil {
			return err
		}
		r, err := runPgbench(ctx, p.db, conns, d/e2eRounds, sqlFile, "PGOPTIONS=-c enable_sort=off")
		if err != nil {
			return err
		}
		gw, raw = gw+g/e2eRounds, raw+r/e2eRounds
	}
	fmt.Printf("%-44s %8.0f req/s (wrk -c%d, %d users)\n", "list-e2e, GET /api/contacts?limit=50", gw, conns, e2eReaders)
	fmt.Printf("%-44s %8.0f tps (pgbench -M prepared -c%d)\n", "  the page's SELECT", raw, conns)
	fmt.Printf("%-44s %8.3fx (target: 0.35 or more)\n", "  ratio", gw/raw)

	dsn, err := ensureDatabase(ctx, p.db, false)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	c := p.client(org, 1)
	api, direct, err := measurePair(300, func(i int) error {
		c.token = readers[i%len(readers)]
		return c.get(ctx, "/api/contacts?limit=50")
	}, func(int) error { return rawPage(ctx, pool, sql) })
	if err != nil {
		return err
	}
	fmt.Printf("%-44s gateway p50 %s, raw p50 %s: +%.2f ms (target: +0.7 ms or less)\n", "  one client", api.p50, direct.p50,
		float64(api.p50-direct.p50)/float64(time.Millisecond))
	return nil
}

// rawPage runs the page's SELECT as contacts does, sorting off in its transaction, in one
// pipeline, reading every value.
func rawPage(ctx context.Context, pool *pgxpool.Pool, sql string) error {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL enable_sort = off`)
	b.Queue(sql).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			if _, err := rows.Values(); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	b.Queue(`COMMIT`)
	return pool.SendBatch(ctx, b).Close()
}

// startE2EOrg starts the product for the suite name (database chorus_bench_<name>_e2e, Redis
// database redisDB) once the tools it needs are found, with an organization of the same name
// in a zone where it is day, which it returns.
func startE2EOrg(ctx context.Context, name string, redisDB int, tools ...string) (*product, productOrg, string, error) {
	packages := map[string]string{"wrk": "wrk", "pgbench": "postgresql-client"}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, productOrg{}, "", fmt.Errorf("%s-e2e needs %s (Debian package %s)", name, tool, packages[tool])
		}
	}
	_, day, err := zones(time.Now())
	if err != nil {
		return nil, productOrg{}, "", err
	}
	p, err := startProduct(ctx, "chorus_bench_"+name+"_e2e", redisDB)
	if err != nil {
		return nil, productOrg{}, "", err
	}
	org, err := p.newOrg(ctx, name, day, fmt.Sprintf("+1646555%04d", 200+redisDB), 10, 0)
	if err != nil {
		p.stop()
		return nil, productOrg{}, "", err
	}
	return p, org, day, nil
}

// clients are k users with access to org, each a client of its own.
func (p *product) clients(ctx context.Context, org productOrg, prefix, access string, k int) ([]*apiClient, error) {
	tokens, err := p.members(ctx, org, prefix, access, k)
	if err != nil {
		return nil, err
	}
	clients := make([]*apiClient, k)
	for i, t := range tokens {
		o := org
		o.token = t
		clients[i] = p.client(o, 1)
	}
	return clients, nil
}

// members adds k users with access to org and returns their tokens.
func (p *product) members(ctx context.Context, org productOrg, prefix, access string, k int) ([]string, error) {
	tokens := make([]string, k)
	for i := range k {
		user := fmt.Sprintf("%s-%d", prefix, i)
		if err := p.ctl(ctx, nil, "member", "add", "--org", org.id, "--user", user, "--access", access); err != nil {
			return nil, err
		}
		var tok struct{ Token string }
		if err := p.ctl(ctx, &tok, "token", "--user", user, "--ttl", "8h"); err != nil {
			return nil, err
		}
		tokens[i] = tok.Token
	}
	return tokens, nil
}

var (
	wrkRate    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkErrors  = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)|Socket errors: .*`)
	pgbenchTPS = regexp.MustCompile(`tps = ([0-9.]+)`)
)

// runWrk runs wrk on url and returns its rate; any answer but 2xx fails the run.
func runWrk(ctx context.Context, conns int, d time.Duration, script, url string, args ...string) (float64, error) {
	cmd := exec.CommandContext(ctx, "wrk", append([]string{"-t2", "-c" + strconv.Itoa(conns), "-d" + strconv.Itoa(int(d.Seconds())) + "s",
		"-s", script, url, "--"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("wrk: %w: %s", err, out)
	}
	if m := wrkErrors.Find(out); m != nil {
		return 0, fmt.Errorf("wrk: %s", m)
	}
	m := wrkRate.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("wrk printed no rate: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// e2eRounds is how many turns each side of list-e2e and create-e2e takes. pgbench's duration
// includes connecting its clients, which on a busy machine takes seconds: a turn must be long
// enough to leave time to run.
const e2eRounds = 3

// runPgbench runs a pgbench script against db with conns clients on two threads, with env
// added to its environment, and returns its transactions per second.
func runPgbench(ctx context.Context, db string, conns int, d time.Duration, script string, env ...string) (float64, error) {
	cmd := exec.CommandContext(ctx, "pgbench", "-h", "127.0.0.1", "-U", "postgres", "-n", "-M", "prepared", "-c", strconv.Itoa(conns), "-j2",
		"-T", strconv.Itoa(int(d.Seconds())), "-f", script, db)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	m := pgbenchTPS.FindSubmatch(out) // the rate without the initial connection time
	if m == nil {
		return 0, fmt.Errorf("pgbench printed no rate: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// e2eCreators is how many users create contacts in create-e2e, e2eCreateConns of them at a time:
// the gateway's per-user limit must not be what the case measures.
const (
	e2eCreators    = 64
	e2eCreateConns = 16
)

// benchCreateE2E is POST /api/contacts as a user gets it: e2eCreateConns clients of one
// organization creating contacts through the stack as make run starts it for d, against
// pgbench with as many clients inserting the same rows, one a transaction, into a scratch table
// of the contacts table's shape (columns, constraints, indexes) on the same database.
func benchCreateE2E(ctx context.Context, d time.Duration) error {
	p, org, day, err := startE2EOrg(ctx, "create", 10, "pgbench")
	if err != nil {
		return err
	}
	defer p.stop()
	clients, err := p.clients(ctx, org, "bench-creator", "write", e2eCreators)
	if err != nil {
		return err
	}
	dsn, err := ensureDatabase(ctx, p.db, false)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS bench_scratch CASCADE; CREATE SCHEMA bench_scratch;
		CREATE TABLE bench_scratch.contacts (LIKE contacts.contacts INCLUDING ALL)`); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "chorus-create-e2e")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "insert.sql")
	insert := `\set n random(1000000, 9999999)
INSERT INTO bench_scratch.contacts (id, organization_id, phone, first_name, last_name, timezone, tags)
VALUES (gen_random_uuid(), '` + org.id + `', '+1303' || :n, 'Mary', 'Smith', '` + day + `', '{create}') ON CONFLICT DO NOTHING;
`
	if err := os.WriteFile(script, []byte(insert), 0o600); err != nil {
		return err
	}
	var next atomic.Int64
	create := func(ctx context.Context) error {
		i := next.Add(1)
		body := map[string]any{"phone": fmt.Sprintf("+1720%07d", 2000000+i), "firstName": "Mary", "lastName": "Smith",
			"timezone": day, "tags": []string{"create"}}
		return clients[int(i)%len(clients)].send(ctx, "POST", "/api/contacts", body, nil)
	}
	fmt.Printf("\ncreate-e2e: %d clients for %s a side, in %d alternating slices...\n", e2eCreateConns, d, e2eRounds)
	var api, raw float64
	for range e2eRounds {
		a, err := throughput(ctx, e2eCreateConns, d/e2eRounds, create)
		if err != nil {
			return fmt.Errorf("create through the API: %w", err)
		}
		r, err := runPgbench(ctx, p.db, e2eCreateConns, d/e2eRounds, script)
		if err != nil {
			return err
		}
		api, raw = api+a/e2eRounds, raw+r/e2eRounds
	}
	fmt.Printf("%-44s %8.0f contacts/s (%d clients, %d users)\n", "create-e2e, POST /api/contacts", api, e2eCreateConns, e2eCreators)
	fmt.Printf("%-44s %8.0f rows/s (pgbench -c%d, one insert a transaction)\n", "  raw insert of the same rows", raw, e2eCreateConns)
	fmt.Printf("%-44s %8.3fx (target: 0.12 or more)\n", "  ratio", api/raw)
	return nil
}
