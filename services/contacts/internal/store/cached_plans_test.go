package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// A connection keeps the plans of the statements it prepared. A plan made while the contacts
// table was new and nearly empty, before anything analyzed it (autovacuum off, or not yet
// run), found every index leading with organization_id as cheap as the one the statement
// probes, and may walk one of them: kept, it walks the whole organization once the list has
// grown. A create and its lookup's result run on the service's connections from its first
// contact on, so their statements must still read what they ask for on connections that ran
// them while the table was small.
func TestCreateAndLookupStatementsReadWhatTheyAskForAfterTheTableGrew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	_, err := pool.Exec(ctx, `ALTER TABLE contacts SET (autovacuum_enabled = false)`)
	require.NoError(t, err)
	ex := newExplainingPool(t, pool)
	st := newStore(t, ex.pool)
	org := uuid.New()
	str := func(s string) *string { return &s }

	// Enough runs on the near-empty table for each statement's plan to become its generic one.
	for i := range 8 {
		phone := fmt.Sprintf("+1303555%04d", i)
		c, created, err := st.CreateOrMerge(ctx, org, store.Changes{Phone: str(phone)}, noLookups{}, store.Origin{Source: store.SourceAPI})
		require.NoError(t, err)
		require.True(t, created)
		_, err = st.SetTextable(ctx, org, c.ID, phone, true)
		require.NoError(t, err)
		_, created, err = st.CreateOrMerge(ctx, org, store.Changes{Phone: str(phone), City: str("Denver")}, noLookups{}, store.Origin{Source: store.SourceAPI})
		require.NoError(t, err)
		require.False(t, created)
	}
	require.NoError(t, fill(ctx, pool, timeOrderedIDs, org, "+1646", "e2e", newOrgContacts))

	var pendingID uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM contacts WHERE organization_id = $1 AND phone = $2`,
		org, newPhone(pendingForTextable)).Scan(&pendingID))
	for _, c := range []struct {
		name string
		rows int
		run  func(t *testing.T)
	}{
		{"CreateOrMerge of a new contact", 2, func(t *testing.T) {
			_, created, err := st.CreateOrMerge(ctx, org, store.Changes{Phone: str("+16469990001")}, noLookups{}, store.Origin{Source: store.SourceAPI})
			require.NoError(t, err)
			assert.True(t, created)
		}},
		{"CreateOrMerge into the contact with the phone", 2, func(t *testing.T) {
			_, created, err := st.CreateOrMerge(ctx, org, store.Changes{Phone: str(newPhone(340)), City: str("Albany")}, noLookups{}, store.Origin{Source: store.SourceAPI})
			require.NoError(t, err)
			assert.False(t, created)
		}},
		{"SetTextable (a lookup's result)", 1, func(t *testing.T) {
			changed, err := st.SetTextable(ctx, org, pendingID, newPhone(pendingForTextable), true)
			require.NoError(t, err)
			assert.True(t, changed)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			plans := ex.during(func() { c.run(t) })
			budget := buffersPerRow*c.rows + buffersPerStatement
			checked := 0
			for _, p := range plans {
				if !onContactTables.MatchString(p.QueryText) {
					continue
				}
				checked++
				assert.LessOrEqual(t, p.Plan.Buffers(), budget, "%s\nreads %d buffers (at most %d): %s",
					p.QueryText, p.Plan.Buffers(), budget, p.Plan.Summary())
			}
			require.NotZero(t, checked, "the call ran no statement on contacts")
		})
	}
}

// explainingPool is one connection to a database on which every statement's plan, as run,
// with the buffers it read, is sent to the client (auto_explain, its LOG messages raised to
// the client) and kept while during runs.
type explainingPool struct {
	pool  *pgxpool.Pool
	mu    sync.Mutex
	on    bool
	plans []pgtest.Explained
}

func newExplainingPool(t *testing.T, of *pgxpool.Pool) *explainingPool {
	t.Helper()
	ex := &explainingPool{}
	cfg := of.Config()
	cfg.MaxConns = 1
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { ex.add(n.Message) }
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `LOAD 'auto_explain'`)
		if err == nil {
			_, err = conn.Exec(ctx, `SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on;
				SET auto_explain.log_buffers = on; SET auto_explain.log_timing = off; SET auto_explain.log_format = json;
				SET client_min_messages = log`)
		}
		return err
	}
	var err error
	ex.pool, err = pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(ex.pool.Close)
	return ex
}

func (ex *explainingPool) add(msg string) {
	i := strings.Index(msg, "{")
	if i < 0 {
		return
	}
	var r pgtest.Explained
	if json.Unmarshal([]byte(msg[i:]), &r) != nil {
		return
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.on {
		ex.plans = append(ex.plans, r)
	}
}

// during runs f and returns the plans of the statements it ran.
func (ex *explainingPool) during(f func()) []pgtest.Explained {
	ex.mu.Lock()
	ex.on, ex.plans = true, nil
	ex.mu.Unlock()
	f()
	ex.mu.Lock()
	defer ex.mu.Unlock()
	ex.on = false
	return ex.plans
}
