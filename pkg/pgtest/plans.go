package pgtest

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The plan cache modes a statement is explained under: the custom plan of a prepared
// statement's first five executions, and the generic plan it may switch to after. Plan tests
// explain a store's statements as the code sends them (recorded by a Recorder) because a
// test of results cannot see a bad plan: one that reads a whole organization, or rescans a
// batch once per row, returns the same rows.
const (
	CustomPlan  = "force_custom_plan"
	GenericPlan = "force_generic_plan"
)

// PlanModes are both plan cache modes, custom first.
var PlanModes = []string{CustomPlan, GenericPlan}

// Statement is one statement a store sent, with its arguments and the settings its
// connection's session was opened with (which may change its plan).
type Statement struct {
	SQL      string
	Args     []any
	Settings map[string]string
}

// Recorder is a pgx tracer that records the statements sent through it, queries and batches
// alike, between Start and Stop.
type Recorder struct {
	mu    sync.Mutex
	on    bool
	stmts []Statement
}

// Traced opens a pool on pool's database and settings whose statements rec records, closed
// when tb ends.
func Traced(tb testing.TB, pool *pgxpool.Pool, rec *Recorder) *pgxpool.Pool {
	tb.Helper()
	cfg := pool.Config()
	cfg.ConnConfig.Tracer = rec
	traced, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(tb, err)
	tb.Cleanup(traced.Close)
	return traced
}

// Start forgets what was recorded and records from now on.
func (r *Recorder) Start() { r.mu.Lock(); r.on, r.stmts = true, nil; r.mu.Unlock() }

// Stop ends the recording and returns its statements in the order they were sent.
func (r *Recorder) Stop() []Statement {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.stmts
}

func (r *Recorder) add(conn *pgx.Conn, sql string, args []any) {
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			args = args[1:] // how pgx runs the statement, not one of its arguments
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.stmts = append(r.stmts, Statement{SQL: sql, Args: args, Settings: sessionSettings(conn)})
	}
}

// sessionSettings are the settings conn's session was opened with, but for the search path,
// which the replaying connection shares.
func sessionSettings(conn *pgx.Conn) map[string]string {
	out := map[string]string{}
	for k, v := range conn.Config().RuntimeParams {
		if k != "search_path" {
			out[k] = v
		}
	}
	return out
}

// TraceQueryStart records a query; the other Trace methods but TraceBatchQuery do nothing.
func (r *Recorder) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.add(conn, d.SQL, d.Args)
	return ctx
}

func (r *Recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *Recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery records each query of a batch.
func (r *Recorder) TraceBatchQuery(_ context.Context, conn *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.add(conn, d.SQL, d.Args)
}

func (r *Recorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

var (
	txControl = regexp.MustCompile(`(?i)^\s*(begin|commit|rollback)\b`)
	setting   = regexp.MustCompile(`(?i)^\s*set\s`)
)

// Plan is what EXPLAIN ANALYZE found of one recorded statement.
type Plan struct {
	SQL  string
	Plan PlanNode
}

// Explain replays stmts in a transaction on pool that it rolls back, under plan cache mode
// mode: a SET is applied as the code applied it, a statement that on matches is prepared and
// explained with its arguments under its session's settings (EXPLAIN ANALYZE: writes run,
// then roll back), the rest (transaction control, other tables' statements) is left out.
func Explain(tb testing.TB, pool *pgxpool.Pool, stmts []Statement, mode string, on *regexp.Regexp) []Plan {
	tb.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(tb, err)
	defer func() { require.NoError(tb, tx.Rollback(ctx)) }()
	_, err = tx.Exec(ctx, `SET LOCAL plan_cache_mode = `+mode)
	require.NoError(tb, err)
	var out []Plan
	for _, s := range stmts {
		switch {
		case txControl.MatchString(s.SQL):
		case setting.MatchString(s.SQL):
			_, err := tx.Exec(ctx, s.SQL, s.Args...)
			require.NoError(tb, err)
		case on.MatchString(s.SQL):
			for k, v := range s.Settings {
				_, err := tx.Exec(ctx, `SELECT set_config($1, $2, true)`, k, v)
				require.NoError(tb, err)
			}
			out = append(out, explainPrepared(tb, tx, s))
			for k := range s.Settings {
				_, err := tx.Exec(ctx, `SET LOCAL `+pgx.Identifier{k}.Sanitize()+` TO DEFAULT`)
				require.NoError(tb, err)
			}
		}
	}
	return out
}

// explainPrepared prepares s and explains its execution with s's arguments written as
// literals of the prepared statement's parameter types: as parameters of a prepared
// statement, as the code sends them, so that the plan cache mode decides the plan.
func explainPrepared(tb testing.TB, tx pgx.Tx, s Statement) Plan {
	tb.Helper()
	ctx := context.Background()
	_, err := tx.Exec(ctx, `PREPARE hot AS `+s.SQL)
	require.NoError(tb, err)
	defer func() {
		_, err := tx.Exec(ctx, `DEALLOCATE hot`)
		require.NoError(tb, err)
	}()
	var types []string
	require.NoError(tb, tx.QueryRow(ctx, `SELECT parameter_types::text[] FROM pg_prepared_statements WHERE name = 'hot'`).
		Scan(&types))
	require.Len(tb, s.Args, len(types))
	lits := make([]string, len(types))
	for i, typ := range types {
		var lit string
		require.NoError(tb, tx.QueryRow(ctx, `SELECT quote_nullable($1::`+typ+`)`, s.Args[i]).Scan(&lit))
		lits[i] = lit + "::" + typ
	}
	var res []Explained
	require.NoError(tb, tx.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE hot(`+strings.Join(lits, ", ")+`)`).
		Scan(&res))
	return Plan{SQL: s.SQL, Plan: res[0].Plan}
}

// EstimatedRows is the planner's estimate of the rows query returns: a test of stale
// statistics checks with it that they are stale.
func EstimatedRows(tb testing.TB, pool *pgxpool.Pool, query string, args ...any) float64 {
	tb.Helper()
	var plan []Explained
	require.NoError(tb, pool.QueryRow(context.Background(), `EXPLAIN (FORMAT JSON) `+query, args...).Scan(&plan))
	return plan[0].Plan.PlanRows
}

// Explained is EXPLAIN's JSON (and auto_explain's), the fields plan tests read.
type Explained struct {
	QueryText string   `json:"Query Text"` // auto_explain's only
	Plan      PlanNode `json:"Plan"`
}

// PlanNode is one node of a plan.
type PlanNode struct {
	NodeType     string     `json:"Node Type"`
	IndexName    string     `json:"Index Name"`
	CTEName      string     `json:"CTE Name"`
	FunctionName string     `json:"Function Name"`
	PlanRows     float64    `json:"Plan Rows"`
	ActualLoops  int        `json:"Actual Loops"`
	Hit          int        `json:"Shared Hit Blocks"`
	Read         int        `json:"Shared Read Blocks"`
	Plans        []PlanNode `json:"Plans"`
}

// Buffers is the shared buffers the plan read. A node's count includes its children's, except
// a data-modifying CTE's, which runs after the main plan: so each node counts what its own
// count adds to its children's (none when less), and the tree sums them.
func (n PlanNode) Buffers() int {
	own, sum := n.Hit+n.Read, 0
	for _, c := range n.Plans {
		own -= c.Hit + c.Read
		sum += c.Buffers()
	}
	return max(own, 0) + sum
}

// Rescans is the most times any CTE Scan or Function Scan (an unnest of a batch) of the plan
// ran. Such a scan reads its whole result each time and no shared buffer, so a join that
// rescans one per row of a batch is quadratic in the batch where its buffers look linear:
// a plan that joins batches by key runs each once.
func (n PlanNode) Rescans() int {
	most := 0
	if n.NodeType == "CTE Scan" || n.NodeType == "Function Scan" {
		most = n.ActualLoops
	}
	for _, c := range n.Plans {
		most = max(most, c.Rescans())
	}
	return most
}

// Summary names the plan's nodes, their indexes, CTEs or functions and the loops of those
// that ran more than once, depth first.
func (n PlanNode) Summary() string {
	s := n.NodeType
	for _, on := range []string{n.IndexName, n.CTEName, n.FunctionName} {
		if on != "" {
			s += " on " + on
		}
	}
	if n.ActualLoops > 1 {
		s += " [loops=" + strconv.Itoa(n.ActualLoops) + "]"
	}
	if len(n.Plans) == 0 {
		return s
	}
	parts := make([]string, len(n.Plans))
	for i, c := range n.Plans {
		parts[i] = c.Summary()
	}
	return s + " (" + strings.Join(parts, ", ") + ")"
}

// AssertPlans explains stmts' statements that on matches under each of PlanModes (Explain)
// and asserts that each reads at most budget shared buffers and scans no CTE or unnest more
// than once (Rescans), logging each plan's Summary. It fails the test when no statement
// matched.
func AssertPlans(t *testing.T, pool *pgxpool.Pool, stmts []Statement, on *regexp.Regexp, budget int) {
	t.Helper()
	checked := 0
	for _, mode := range PlanModes {
		for _, p := range Explain(t, pool, stmts, mode, on) {
			checked++
			buffers, rescans, summary := p.Plan.Buffers(), p.Plan.Rescans(), p.Plan.Summary()
			t.Logf("%s: %d buffers (at most %d), scans of a CTE or unnest run at most %d times: %s", mode, buffers, budget, rescans, summary)
			assert.LessOrEqual(t, buffers, budget, "%s of\n%s\nreads %d buffers (at most %d): %s",
				mode, p.SQL, buffers, budget, summary)
			assert.LessOrEqual(t, rescans, 1, "%s of\n%s\nscans a CTE or unnest %d times, once per row of the batch: %s",
				mode, p.SQL, rescans, summary)
		}
	}
	require.NotZero(t, checked, "no statement matched %s", on)
}
