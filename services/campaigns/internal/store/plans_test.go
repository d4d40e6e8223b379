package store_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
	"github.com/chorus-sms/chorus/services/campaigns/migrations"
)

// A new campaign's status events are applied before autovacuum has analyzed its recipients:
// the planner's statistics do not know them. ApplyStatuses' statements, as the code sends
// them (recorded from the pool), are explained as a custom and as a generic plan and must
// read a number of buffers bounded by the batch of changes, and must join the batch once: a
// plan that rescans a CTE or an unnest once per recipient of the campaign (a nested loop with
// a scan of recipients outside) is quadratic, yet reads no more buffers, since those scans
// read none. (Before this test, the update joined the batch with recipients under
// campaign_id = $1, and its custom plan in the analyzed layout scanned the campaign's
// recipients and rescanned the locked set once per row: 300 rescans, 154,000 buffers.)
// Changes by phone, which only events published before messaging named the contact carry,
// read the campaign's recipients by design (no index by phone) and are not checked here.
func TestApplyStatusesReadsItsBatchOnceBeforeTheCampaignIsAnalyzed(t *testing.T) {
	t.Parallel()
	for _, l := range recipientLayouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			c := newUnanalyzedAudience(t, l)
			for _, call := range c.statusCalls(t) {
				t.Run(call.name, func(t *testing.T) { c.check(t, call) })
			}
		})
	}
}

// recipientLayout is how the recipients table was filled and analyzed when the campaign's
// statements run.
type recipientLayout struct {
	name string
	// analyzed: the table was analyzed holding another campaign's recipients only, then the
	// campaign's audience was stored; else it was never analyzed, and the planner estimates
	// from its size.
	analyzed   bool
	recipients int
}

var recipientLayouts = []recipientLayout{
	{name: "analyzed before the campaign", analyzed: true, recipients: 50_000},
	// As on a server whose autovacuum has not run yet (or is off).
	{name: "never analyzed", analyzed: false, recipients: 9_000},
}

const (
	// otherRecipients is the analyzed campaign's audience, all delivered.
	otherRecipients = 3_000
	// statusBatch is how many changes a read of status events applies at once.
	statusBatch = 300
)

// unanalyzedAudience is a database whose recipients table was never analyzed, or last
// analyzed while it held another campaign's recipients only; org's campaign was stored after,
// with autovacuum off.
type unanalyzedAudience struct {
	pool     *pgxpool.Pool // for the test's own statements
	traced   *pgxpool.Pool // the same database, through which the store's statements are recorded
	rec      *pgtest.Recorder
	org      uuid.UUID
	campaign uuid.UUID
}

func newUnanalyzedAudience(t *testing.T, l recipientLayout) *unanalyzedAudience {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...)
	c := &unanalyzedAudience{pool: pool, rec: &pgtest.Recorder{}, org: uuid.New(), campaign: uuid.New()}
	_, err := pool.Exec(ctx, `ALTER TABLE recipients SET (autovacuum_enabled = false);
		ALTER TABLE campaigns SET (autovacuum_enabled = false)`)
	require.NoError(t, err)
	if l.analyzed {
		other := uuid.New()
		fillAudience(t, pool, uuid.New(), other, "+1202", otherRecipients, "delivered")
		_, err = pool.Exec(ctx, `ANALYZE recipients, campaigns`)
		require.NoError(t, err)
	}
	fillAudience(t, pool, c.org, c.campaign, "+1646", l.recipients, "queued")

	// The premise: the planner believes the campaign has (about) one recipient, or has no
	// statistics at all.
	if l.analyzed {
		require.Less(t, pgtest.EstimatedRows(t, pool, `SELECT * FROM recipients WHERE campaign_id = $1`, c.campaign), 10.0,
			"the statistics must not know the new campaign's recipients")
	} else {
		var tuples float64
		require.NoError(t, pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'recipients'::regclass`).Scan(&tuples))
		require.Negative(t, tuples, "recipients must never have been analyzed")
	}
	c.traced = pgtest.Traced(t, pool, c.rec)
	return c
}

// fillAudience stores org's sending campaign with n recipients of status, phones prefix+i,
// in one statement.
func fillAudience(t *testing.T, pool *pgxpool.Pool, org, campaign uuid.UUID, prefix string, n int, status string) {
	t.Helper()
	ctx := context.Background()
	st, now := store.New(pool), time.Now()
	cp := store.Campaign{ID: campaign, OrgID: org, Name: "spring sale", Status: store.StatusSending, Channel: "text",
		ForceRoute: "AUTO", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &cp) }))
	_, err := pool.Exec(ctx, `
		INSERT INTO recipients (campaign_id, organization_id, contact_id, phone, body, credits, status, timezone)
		SELECT $1, $2, gen_random_uuid(), $3 || lpad(i::text, 7, '0'),
			'Hi First' || i || ', our spring sale starts Saturday: 20% off everything in store. Reply STOP to opt out.',
			1, $5, 'America/New_York'
		FROM generate_series(1, $4::int) AS i`, campaign, org, prefix, n, status)
	require.NoError(t, err)
}

// statusCall is one call of ApplyStatuses; before, when set, moves the recipients to the
// state the call finds them in (committed, since the call's statements are replayed after).
type statusCall struct {
	name    string
	before  func(t *testing.T)
	changes []store.StatusChange
}

// What a statement may read per change, and besides. The recipients' statement finds each
// recipient by a primary key probe (the index's levels and a heap page) to read it, one to
// lock it, one to update it, and its new version takes an entry in each of the table's
// indexes; the counters' statement updates one campaign row. A plan that reads the campaign's
// recipients reads its 1,000 (50,000 recipients) or 190 (9,000) heap pages at least, and a
// plan that rescans the batch per recipient fails Rescans whatever it reads.
const (
	statusPerChange     = 24
	buffersPerStatement = 64
)

// statusCalls are a read's changes as messaging's events bring them: a batch of queued
// recipients taken by the carrier, then delivered.
func (c *unanalyzedAudience) statusCalls(t *testing.T) []statusCall {
	ctx := context.Background()
	// A batch of recipients spread over the campaign, in no order of contact id.
	rows, err := c.pool.Query(ctx, `SELECT contact_id FROM recipients WHERE campaign_id = $1
		ORDER BY md5(phone) LIMIT $2`, c.campaign, statusBatch)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	require.Len(t, ids, statusBatch)
	changes := func(status string) []store.StatusChange {
		out := make([]store.StatusChange, len(ids))
		for i, id := range ids {
			out[i] = store.StatusChange{Who: store.Who{Contact: id, Phone: "+19995550100"}, Status: status, CountFailure: true}
		}
		return out
	}
	return []statusCall{
		{name: "queued to sent", changes: changes("sent")},
		{name: "sent to delivered", changes: changes("delivered"), before: func(t *testing.T) {
			_, err := c.pool.Exec(ctx, `UPDATE recipients SET status = 'sent' WHERE campaign_id = $1 AND contact_id = ANY($2)`,
				c.campaign, ids)
			require.NoError(t, err)
		}},
	}
}

// errRollBack ends a call's transaction without committing: its statements are explained on
// the recipients as they were before it.
var errRollBack = errors.New("rolled back by the test")

// check runs call through the recording pool in a transaction it rolls back, then explains
// each of its statements on recipients and campaigns as a custom and as a generic plan.
func (c *unanalyzedAudience) check(t *testing.T, call statusCall) {
	ctx := context.Background()
	if call.before != nil {
		call.before(t)
	}
	st := store.New(c.traced)
	c.rec.Start()
	require.ErrorIs(t, st.InTx(ctx, func(tx pgx.Tx) error {
		moved, err := st.ApplyStatuses(ctx, tx, c.org, c.campaign, call.changes)
		if err != nil {
			return err
		}
		assert.Equal(t, len(call.changes), moved)
		return errRollBack
	}), errRollBack)
	stmts := c.rec.Stop()
	pgtest.AssertPlans(t, c.pool, stmts, onStatusTables, statusPerChange*len(call.changes)+buffersPerStatement)
}

// onStatusTables picks the statements on recipients and campaigns out of a call's.
var onStatusTables = regexp.MustCompile(`(?i)\b(from|update|into)\s+(recipients|campaigns)\b`)
