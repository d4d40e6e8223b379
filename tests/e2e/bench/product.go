package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chorus-sms/chorus/pkg/registry"
)

// product is the stack as a user runs it: `make run`'s script (deploy/local/run.sh) starting
// bin/chorus with its own defaults and JSON logs, in a database of its own, driven only through
// REST and bin/chorusctl. Only the listen addresses differ from make run's (free ports, so a dev
// stack may keep running), and whatever vars the suite names, which it prints.
type product struct {
	root, db, base string
	env            []string
	cmd            *exec.Cmd
	logPath        string
}

// startProduct builds bin/chorus and bin/chorusctl (make build), drops and creates database db,
// empties Redis database redisDB and starts the stack on both, returning once the gateway
// answers. Redis is the stack's own: two stacks on one Redis database share its event streams'
// consumer groups, and each would take, and drop, events of the other's database.
func startProduct(ctx context.Context, db string, redisDB int) (*product, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	build := exec.CommandContext(ctx, "make", "--no-print-directory", "build")
	build.Dir, build.Stdout, build.Stderr = root, io.Discard, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("make build: %w", err)
	}
	if _, err := ensureDatabase(ctx, db, true); err != nil {
		return nil, err
	}
	redisURL := fmt.Sprintf("redis://127.0.0.1:6379/%d", redisDB)
	if out, err := exec.CommandContext(ctx, "redis-cli", "-n", strconv.Itoa(redisDB), "FLUSHDB").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("empty %s: %w: %s", redisURL, err, out)
	}
	p := &product{root: root, db: db, logPath: filepath.Join(os.TempDir(), "chorus-"+db+".log")}
	keyDir, err := os.MkdirTemp("", "chorus-product")
	if err != nil {
		return nil, err
	}
	env := map[string]string{"CHORUS_LOCAL_DB": db, "CHORUS_DEV_KEY": filepath.Join(keyDir, "dev-key.pem"), "CHORUS_REDIS_URL": redisURL}
	addrs := append([]string{"CHORUS_DEV_JWKS_ADDR"}, registryAddrVars()...)
	for _, v := range addrs {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		env[v] = "127.0.0.1:" + strconv.Itoa(port)
	}
	p.base = "http://" + env["CHORUS_HTTP_ADDR"]
	p.env = os.Environ()
	for k, v := range env {
		p.env = append(p.env, k+"="+v)
	}
	logf, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(filepath.Join(root, "deploy/local/run.sh"))
	p.cmd.Dir, p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = root, p.env, logf, logf
	// run.sh execs bin/chorus, which stops with the bench however the bench ends.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	logf.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		res, err := http.Get(p.base + "/healthz")
		if err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) || p.cmd.ProcessState != nil {
			p.stop()
			return nil, fmt.Errorf("the stack did not answer at %s within a minute (log: %s)", p.base, p.logPath)
		}
	}
	return p, nil
}

// stop ends the stack as Ctrl-C would.
func (p *product) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}

// ctl runs bin/chorusctl against the stack and decodes its JSON answer into out (nil: none).
func (p *product) ctl(ctx context.Context, out any, args ...string) error {
	c := exec.CommandContext(ctx, filepath.Join(p.root, "bin/chorusctl"), args...)
	c.Dir, c.Env = p.root, p.env
	var stderr bytes.Buffer
	c.Stderr = &stderr
	b, err := c.Output()
	if err != nil {
		return fmt.Errorf("chorusctl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// productOrg is an organization made as the README's walk-through makes one: chorusctl org
// create with credits, a sending number, a member with write access and a token for them.
type productOrg struct {
	id, token, numberID string
}

func (p *product) newOrg(ctx context.Context, name, zone, number string, mps, credits int) (productOrg, error) {
	var o productOrg
	var org struct{ OrganizationID string }
	if err := p.ctl(ctx, &org, "org", "create", "--name", name, "--timezone", zone, "--pricing", "per_message",
		"--credits", strconv.Itoa(credits)); err != nil {
		return o, err
	}
	o.id = org.OrganizationID
	var num struct{ PhoneNumberID string }
	if err := p.ctl(ctx, &num, "number", "add", "--org", o.id, "--number", number, "--default", "--mps", strconv.Itoa(mps)); err != nil {
		return o, err
	}
	o.numberID = num.PhoneNumberID
	if err := p.ctl(ctx, nil, "member", "add", "--org", o.id, "--user", "bench-"+name, "--access", "write"); err != nil {
		return o, err
	}
	var tok struct{ Token string }
	if err := p.ctl(ctx, &tok, "token", "--user", "bench-"+name, "--ttl", "8h"); err != nil {
		return o, err
	}
	o.token = tok.Token
	return o, nil
}

// client is a REST client of org with its own keep-alive connections.
func (p *product) client(o productOrg, conns int) *apiClient {
	return &apiClient{base: p.base, token: o.token, org: o.id,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}}
}

// send makes one JSON request and decodes a 2xx answer into out.
func (c *apiClient) send(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("x-organization-id", c.org)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	rb, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, rb)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(rb, out)
}

// createContacts creates n contacts through POST /api/contacts, e2eCreateConns at a time, the
// i-th by clients[i % len(clients)] (so no user's share goes past the gateway's per-user rate
// where the stack is fast), each with phone contactPhone(area, i), the zone and one of tags in
// turn; it returns the rate.
func createContacts(ctx context.Context, clients []*apiClient, n, area int, zone string, tags ...string) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, e2eCreateConns)
	start := time.Now()
	for range e2eCreateConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				body := map[string]any{"phone": contactPhone(area, i),
					"firstName": firstNames[i%len(firstNames)], "lastName": lastNames[i%len(lastNames)],
					"timezone": zone, "tags": []string{tags[i%len(tags)]}}
				if err := clients[i%len(clients)].send(ctx, "POST", "/api/contacts", body, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(n) / took.Seconds(), nil
}

// contactPhone is the phone createContacts gives its i-th contact: of area code area, never a
// sandbox landline or failure (last four digits 1000-9999).
func contactPhone(area, i int) string {
	return fmt.Sprintf("+1%03d%03d%04d", area, 200+i/9000, 1000+i%9000)
}

// usage is the CPU time of every process serving the product (bin/chorus, the PostgreSQL
// server's processes, redis-server) and bin/chorus's peak resident set, from /proc, with the
// time the hypervisor took from the machine's CPUs (steal): on a shared host, a run that lost
// much of it reports more CPU per unit for the same work, so it is printed beside the figures.
type usage struct {
	chorus, postgres, redis time.Duration
	steal                   time.Duration
	peakRSS                 int64 // kB, bin/chorus's VmHWM
}

func (u usage) total() time.Duration { return u.chorus + u.postgres + u.redis }

func (u usage) sub(v usage) usage {
	return usage{chorus: u.chorus - v.chorus, postgres: u.postgres - v.postgres, redis: u.redis - v.redis,
		steal: u.steal - v.steal, peakRSS: u.peakRSS}
}

// machineSteal is the steal time of all CPUs so far, from /proc/stat's cpu line (its eighth
// value, in clock ticks of 10 ms).
func machineSteal() time.Duration {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	ticks, _ := strconv.ParseInt(f[8], 10, 64)
	return time.Duration(ticks) * 10 * time.Millisecond
}

// readUsage sums the processes' CPU; PostgreSQL's backends that exited since the last reading
// are missed, so the stack's pooled connections are what it counts.
func readUsage() usage {
	u := usage{steal: machineSteal()}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		var into *time.Duration
		switch {
		case name == "chorus":
			into = &u.chorus
			u.peakRSS = max(u.peakRSS, statusKB(d, "VmHWM:"))
		case name == "postgres" || strings.HasPrefix(name, "postgres"):
			into = &u.postgres
		case strings.HasPrefix(name, "redis-server"):
			into = &u.redis
		default:
			continue
		}
		*into += procCPU(d, into == &u.postgres && isPostmaster(d))
	}
	return u
}

// isPostmaster says the postgres process at dir is the server's first: its parent is not
// PostgreSQL.
func isPostmaster(dir string) bool {
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 2 {
		return false
	}
	comm, err := os.ReadFile("/proc/" + f[1] + "/comm")
	return err == nil && !strings.HasPrefix(strings.TrimSpace(string(comm)), "postgres")
}

// procCPU is a process's user and system time from /proc/PID/stat (clock ticks of 10 ms),
// with its reaped children's when withChildren is set: PostgreSQL's postmaster reaps the
// backends and autovacuum workers that ended, whose time would otherwise drop out of the sum.
func procCPU(dir string, withChildren bool) time.Duration {
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 15 {
		return 0
	}
	var ticks int64
	fields := []int{11, 12}
	if withChildren {
		fields = append(fields, 13, 14)
	}
	for _, i := range fields {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

func statusKB(dir, field string) int64 {
	f, err := os.Open(filepath.Join(dir, "status"))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("the repository's root: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func registryAddrVars() []string {
	var vars []string
	for _, s := range registry.All {
		vars = append(vars, s.AddrVar)
	}
	return vars
}

// freePort is a loopback port free now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
