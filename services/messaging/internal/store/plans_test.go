package store_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// A new organization's first campaign is dispatched before autovacuum has analyzed its
// messages: the planner's statistics do not know them. Each batched statement of the dispatch
// path, as the code sends it (recorded from the pool), is explained as a custom and as a
// generic plan and must read a number of buffers bounded by the batch, and must join the
// batch once: a plan that rescans a CTE or an unnest once per row of the batch (a nested loop
// joining two of them) is quadratic in the batch, yet reads no more buffers, since those
// scans read none. (AcceptMany's update joined two CTEs so before b4be386, and its plans
// rescanned one once per row; AdvanceStatusMany joined the batch with messages under
// conditions on messages, and its plan on a never analyzed table scanned the batch once per
// message of the table.)
func TestDispatchStatementsReadTheirBatchOnceBeforeTheCampaignIsAnalyzed(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			c := newUnanalyzedCampaign(t, l)
			for _, call := range c.dispatchCalls(t) {
				t.Run(call.name, func(t *testing.T) { c.check(t, call) })
			}
		})
	}
}

// layout is how the messages table was filled and analyzed when the campaign's statements run.
type layout struct {
	name string
	// analyzed: the table was analyzed holding another organization's delivered messages only,
	// then the campaign was loaded; else it was never analyzed, and the planner estimates
	// from its size.
	analyzed bool
	// messages is the size of the new organization's campaign, all queued but for one batch
	// each of claimed (sending) and accepted (sent) messages.
	messages int
}

var layouts = []layout{
	{name: "analyzed before the campaign", analyzed: true, messages: 50_000},
	// As on a server whose autovacuum has not run yet (or is off). At this size a join of the
	// batch with messages under conditions on messages (outgoing, the report's provider) was
	// planned as a scan of the table once per message of the batch, as it was in the product
	// early in a campaign.
	{name: "never analyzed", analyzed: false, messages: 9_000},
}

const (
	// otherMessages is the analyzed organization's log.
	otherMessages = 3_000
	// dispatchBatch is the batch the dispatcher's statements are called with.
	dispatchBatch = 300
)

// The messages of the campaign's batches: message i (1 to the layout's messages) is in the batch
// of its i % batchSpacing, spread over the table as a batch of a large campaign is.
const (
	batchSpacing = 30
	claimedBatch = 10 // status sending, for the acceptance
	sentBatch    = 20 // status sent, for the delivery reports
	queuedBatch  = 0  // queued, for the read and the claim
)

// The organizations' sending numbers; message i is sent from number i % 3.
var (
	campaignNumbers = []string{"+12125550100", "+12125550101", "+12125550102"}
	otherNumbers    = []string{"+12025550100", "+12025550101", "+12025550102"}
)

// unanalyzedCampaign is a database whose messages table was never analyzed or last analyzed
// while it held another organization's messages only; org's campaign was loaded after, with
// autovacuum off.
type unanalyzedCampaign struct {
	pool     *pgxpool.Pool // for the test's own statements
	traced   *pgxpool.Pool // the same database, through which the store's statements are recorded
	rec      *pgtest.Recorder
	org      uuid.UUID
	campaign string
}

func newUnanalyzedCampaign(t *testing.T, l layout) *unanalyzedCampaign {
	t.Helper()
	ctx := context.Background()
	c := &unanalyzedCampaign{pool: newPool(t), rec: &pgtest.Recorder{}, org: uuid.New(), campaign: uuid.NewString()}
	_, err := c.pool.Exec(ctx, `ALTER TABLE messages SET (autovacuum_enabled = false);
		ALTER TABLE conversations SET (autovacuum_enabled = false);
		ALTER TABLE source_numbers SET (autovacuum_enabled = false)`)
	require.NoError(t, err)
	if l.analyzed {
		// The analyzed organization sends through Twilio, the new one through the sandbox, as an
		// organization trying the product does: the statistics know neither it nor its provider.
		other, otherCampaign := uuid.New(), uuid.NewString()
		require.NoError(t, fillCampaign(ctx, c.pool, other, otherCampaign, "twilio", otherNumbers, "+1202", otherMessages, true))
		_, err = c.pool.Exec(ctx, `ANALYZE messages, conversations, source_numbers`)
		require.NoError(t, err)
	}
	require.NoError(t, fillCampaign(ctx, c.pool, c.org, c.campaign, "sandbox", campaignNumbers, "+1646", l.messages, false))

	// The premise: the planner believes the organization has (about) one message, or has no
	// statistics at all.
	if l.analyzed {
		require.Less(t, pgtest.EstimatedRows(t, c.pool, `SELECT * FROM messages WHERE organization_id = $1`, c.org), 10.0,
			"the statistics must not know the new organization's messages")
	} else {
		var tuples float64
		require.NoError(t, c.pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'messages'::regclass`).Scan(&tuples))
		require.Negative(t, tuples, "messages must never have been analyzed")
	}

	c.traced = pgtest.Traced(t, c.pool, c.rec)
	return c
}

// fillCampaign inserts n outgoing messages of org's campaign through provider, ids in
// creation order (uuid v7, as the store makes them), contact phones prefix+i, over numbers,
// with the numbers' phone_numbers and source_numbers rows. A done campaign's are delivered; a new
// one's are queued, but for the claimed and sent batches.
func fillCampaign(ctx context.Context, pool *pgxpool.Pool, org uuid.UUID, campaign, provider string, numbers []string, prefix string, n int, done bool) error {
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	_, err := pool.Exec(ctx, `
		INSERT INTO messages (id, organization_id, direction, contact_phone, our_number, body, status, provider,
			provider_message_id, credits, billable, hold_id, source_kind, source_id, dedupe_key, quiet_hours_timezone,
			recipient_timezone, created_at, thread_at, dispatched_at, sent_at, status_at, settled_at)
		SELECT id, $1, 'outgoing', $3 || lpad(i::text, 7, '0'), ($4::text[])[i % 3 + 1],
			'Hi First' || i || ', our spring sale starts Saturday: 20% off everything in store. Reply STOP to opt out.',
			s.status, $10, CASE WHEN s.status IN ('sent', 'delivered') THEN 'SM' || md5(m.id::text) END,
			1, true, 'campaign:' || $2, 'campaign', $2, $2 || ':' || i, 'America/New_York', 'America/New_York',
			t, t, CASE WHEN s.status <> 'queued' THEN t END, CASE WHEN s.status IN ('sent', 'delivered') THEN t END,
			CASE WHEN s.status <> 'queued' THEN t END, CASE WHEN s.status = 'delivered' THEN t END
		FROM unnest($5::uuid[]) WITH ORDINALITY AS m(id, i),
			LATERAL (SELECT now() - interval '1 hour' + i * interval '1 ms') AS c(t),
			LATERAL (SELECT CASE WHEN $6 THEN 'delivered' WHEN i % $7 = $8 THEN 'sending' WHEN i % $7 = $9 THEN 'sent'
				ELSE 'queued' END) AS s(status)`,
		org, campaign, prefix, numbers, ids, done, batchSpacing, claimedBatch, sentBatch, provider)
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `INSERT INTO phone_numbers (id, organization_id, number)
		SELECT gen_random_uuid(), $1, n FROM unnest($2::text[]) AS n`, org, numbers)
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `INSERT INTO source_numbers (organization_id, source_kind, source_id, our_number, phone_number_id, assigned)
		SELECT $1, 'campaign', $2, number, id, $3::int / 3 FROM phone_numbers WHERE number = ANY($4)`,
		org, campaign, n, numbers)
	return err
}

// batch is the ids of the first dispatchBatch messages of the campaign's batch b, in id order.
func (c *unanalyzedCampaign) batch(t *testing.T, b int) []uuid.UUID {
	t.Helper()
	rows, err := c.pool.Query(context.Background(), `SELECT id FROM messages WHERE organization_id = $1
		AND (substring(contact_phone FROM 6)::int) % $2 = $3 ORDER BY id LIMIT $4`, c.org, batchSpacing, b, dispatchBatch)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	require.Len(t, ids, dispatchBatch)
	return ids
}

// dispatchCall is one batched call of the dispatch path. rows is how many rows it asks for and
// perRow what each may read, which bound what each of its statements reads; restore, when
// set, puts back what the call committed, so that its statements are explained on the rows as
// the call found them.
type dispatchCall struct {
	name    string
	rows    int
	perRow  int
	run     func(t *testing.T, st *store.Store)
	restore func(t *testing.T)
}

// errRollBack ends a call's transaction without committing: its statements are explained on
// the rows as they were before it.
var errRollBack = errors.New("rolled back by the test")

// What a statement may read per row of its batch, and besides. A read finds each message by
// a primary key probe (the index's levels and a heap page) and its source's state and its
// number by two more: the correct plans read 7 per row. A write probes the primary key up to
// three times per row (to find or lock it, to update it, to read it back), and the claim and
// the acceptance move the row in and out of the partial indexes of queued and sending
// messages, so its new version takes an entry in each of the table's indexes (the claim also
// probes its source's state and creates a conversation): the correct plans read 25 to 39 per
// row, the most when the rolled-back replay before them left its index entries behind. A plan
// that reads the analyzed layout's organization reads its 4,400 heap pages, more than the
// headroom left there.
const (
	readPerRow          = 8
	writePerRow         = 42
	buffersPerStatement = 64
)

// loaded is ids' messages as the dispatcher holds them: read for dispatch.
func (c *unanalyzedCampaign) loaded(t *testing.T, ids []uuid.UUID) []store.Message {
	t.Helper()
	byID, err := store.New(c.pool).QueuedMessages(context.Background(), ids)
	require.NoError(t, err)
	out := make([]store.Message, len(ids))
	for i, id := range ids {
		out[i] = byID[id].Message
	}
	return out
}

// dispatchCalls are the dispatcher's batched calls, in the order a message meets them: its
// read, its claim, the carrier's acceptance recorded and counted to its number, its delivery
// report. A call in a transaction is rolled back; the claim's is undone (restore).
func (c *unanalyzedCampaign) dispatchCalls(t *testing.T) []dispatchCall {
	ctx := context.Background()
	queued, claimed, sent := c.batch(t, queuedBatch), c.batch(t, claimedBatch), c.batch(t, sentBatch)
	toClaim, taken, toReport := c.loaded(t, queued), c.loaded(t, claimed), c.loaded(t, sent)
	now := time.Now()
	inTx := func(t *testing.T, st *store.Store, fn func(pgx.Tx) error) {
		require.ErrorIs(t, st.InTx(ctx, func(tx pgx.Tx) error {
			if err := fn(tx); err != nil {
				return err
			}
			return errRollBack
		}), errRollBack)
	}
	return []dispatchCall{
		{name: "QueuedMessages", rows: dispatchBatch, perRow: readPerRow, run: func(t *testing.T, st *store.Store) {
			got, err := st.QueuedMessages(ctx, queued)
			require.NoError(t, err)
			assert.Len(t, got, dispatchBatch)
		}},
		{name: "ClaimMany", rows: dispatchBatch, perRow: writePerRow, run: func(t *testing.T, st *store.Store) {
			reqs := make([]store.ClaimRequest, len(toClaim))
			for i, m := range toClaim {
				reqs[i] = store.ClaimRequest{ID: m.ID, DispatchedAt: now, OurNumber: m.OurNumber}
			}
			ok, err := st.ClaimMany(ctx, reqs)
			require.NoError(t, err)
			assert.NotContains(t, ok, false)
		}, restore: func(t *testing.T) {
			_, err := c.pool.Exec(ctx, `UPDATE messages SET status = 'queued', status_at = NULL, dispatched_at = NULL,
				thread_at = created_at WHERE id = ANY($1)`, queued)
			require.NoError(t, err)
			_, err = c.pool.Exec(ctx, `DELETE FROM conversations WHERE organization_id = $1`, c.org)
			require.NoError(t, err)
		}},
		{name: "AcceptMany", rows: dispatchBatch, perRow: writePerRow, run: func(t *testing.T, st *store.Store) {
			accs := make([]store.Acceptance, len(taken))
			for i, m := range taken {
				accs[i] = store.Acceptance{ID: m.ID, ProviderMessageID: fmt.Sprintf("SMtest%d", i), DispatchedAt: m.DispatchedAt, Settled: true}
			}
			inTx(t, st, func(tx pgx.Tx) error {
				moved, err := st.AcceptMany(ctx, tx, accs, now)
				assert.Len(t, moved, dispatchBatch)
				return err
			})
		}},
		{name: "CountSent", rows: len(campaignNumbers), perRow: writePerRow, run: func(t *testing.T, st *store.Store) {
			inTx(t, st, func(tx pgx.Tx) error { return st.CountSent(ctx, tx, taken) })
		}},
		{name: "AdvanceStatusMany to delivered", rows: dispatchBatch, perRow: writePerRow, run: func(t *testing.T, st *store.Store) {
			reports := make([]store.StatusReport, len(toReport))
			for i, m := range toReport {
				reports[i] = store.StatusReport{ID: m.ID, Status: store.StatusDelivered, ProviderMessageID: m.ProviderMessageID}
			}
			inTx(t, st, func(tx pgx.Tx) error {
				moved, err := st.AdvanceStatusMany(ctx, tx, "sandbox", reports, now)
				assert.Len(t, moved, dispatchBatch)
				return err
			})
		}},
	}
}

// check runs call through the recording pool, restores what it committed, then explains each
// of its statements on the dispatch path's tables as a custom and as a generic plan.
func (c *unanalyzedCampaign) check(t *testing.T, call dispatchCall) {
	c.rec.Start()
	call.run(t, store.New(c.traced))
	stmts := c.rec.Stop()
	if call.restore != nil {
		call.restore(t)
	}
	pgtest.AssertPlans(t, c.pool, stmts, onDispatchTables, call.perRow*call.rows+buffersPerStatement)
}

// onDispatchTables picks the statements on the dispatch path's tables out of a call's.
var onDispatchTables = regexp.MustCompile(`(?i)\b(from|update|into)\s+(messages|source_numbers|conversations)\b`)
