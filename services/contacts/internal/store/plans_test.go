package store_test

import (
	"context"
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
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// The product's main path is a new organization with a freshly loaded list, then a campaign,
// before autovacuum has analyzed the new rows: the planner's statistics do not know the
// organization and estimate it at one row, so reading all of it looks as cheap as reading the
// rows asked for. Each hot query of contacts and of their consent history, as the code sends
// it (its SQL and arguments, recorded from the pool), is explained in the form PostgreSQL may run it (a custom plan, as
// for a prepared statement's first five executions, and a generic plan, as it may choose
// after) and must read a number of buffers bounded by the rows it asks for, not by the size of
// the organization.
func TestHotQueriesReadWhatTheyAskForBeforeTheOrganizationIsAnalyzed(t *testing.T) {
	t.Parallel()
	// Which wrong plan wins its tie with the right one depends on the indexes' heights, so the
	// table is laid out three ways: analyzed holding a smaller or a larger other organization,
	// with random ids (which leave the (organization_id, id) indexes taller, and vary from run
	// to run) or ids that follow creation (uuid v7, as the store makes them).
	for _, l := range []layout{{others: 3_000, ids: randomIDs}, {others: 4_400, ids: randomIDs}, {others: 20_000, ids: timeOrderedIDs}} {
		t.Run(fmt.Sprintf("analyzed with %d other contacts, %s ids", l.others, l.ids), func(t *testing.T) {
			t.Parallel()
			o := newUnanalyzedOrg(t, l)
			for _, c := range hotCalls(o) {
				t.Run(c.name, func(t *testing.T) { o.check(t, c) })
			}
		})
	}
}

// newOrgContacts is the size of the list the new organization loads.
const newOrgContacts = 20_000

// Contact i (1 to newOrgContacts) of the new organization has phone newPhone(i); every
// twentieth has an email, every fiftieth's lookup is pending (is_textable NULL) and every
// hundredth opted out.
func newPhone(i int) string { return fmt.Sprintf("+1646%07d", i) }

func newEmail(i int) string { return fmt.Sprintf("c%d@example.com", i) }

// A pending contact's number (i%50 == 0) that no other call changes.
const (
	pendingForMark     = 50
	pendingForTextable = 100 * 50
)

// unanalyzedOrg is a database whose contacts and consent_events tables were last analyzed
// while they held another organization's rows only; org's were loaded after, with autovacuum
// off, so no statistics know them.
type unanalyzedOrg struct {
	pool    *pgxpool.Pool // for the test's own statements
	traced  *pgxpool.Pool // the same database, through which the store's statements are recorded
	inOrder *pgxpool.Pool // the store's in-order pool over traced, recorded as well
	rec     *pgtest.Recorder
	org     uuid.UUID
}

// layout is how the table is filled: the other organization's size and how ids are made.
type layout struct {
	others int
	ids    idKind
}

type idKind string

const (
	timeOrderedIDs idKind = "time-ordered"
	randomIDs      idKind = "random"
)

func newUnanalyzedOrg(t *testing.T, l layout) *unanalyzedOrg {
	t.Helper()
	ctx := context.Background()
	o := &unanalyzedOrg{pool: newPool(t), rec: &pgtest.Recorder{}, org: uuid.New()}
	_, err := o.pool.Exec(ctx, `ALTER TABLE contacts SET (autovacuum_enabled = false);
		ALTER TABLE consent_events SET (autovacuum_enabled = false)`)
	require.NoError(t, err)
	other := uuid.New()
	require.NoError(t, fill(ctx, o.pool, l.ids, other, "+1202", "old", l.others))
	require.NoError(t, fillConsent(ctx, o.pool, other, "+12020000001")) // its contact 1
	_, err = o.pool.Exec(ctx, `ANALYZE contacts, consent_events`)
	require.NoError(t, err)
	require.NoError(t, fill(ctx, o.pool, l.ids, o.org, "+1646", "e2e", newOrgContacts))
	require.NoError(t, fillConsent(ctx, o.pool, o.org, newPhone(historyContact)))

	// The premise: the planner believes the organization has (about) one contact and one
	// consent entry.
	for _, table := range []string{"contacts", "consent_events"} {
		require.Less(t, pgtest.EstimatedRows(t, o.pool, `SELECT * FROM `+table+` WHERE organization_id = $1`, o.org), 10.0,
			"the statistics must not know the new organization's %s", table)
	}

	o.traced = pgtest.Traced(t, o.pool, o.rec)
	o.inOrder, err = store.OpenInOrder(ctx, o.traced, 2)
	require.NoError(t, err)
	t.Cleanup(o.inOrder.Close)
	return o
}

// contactID is the id of contact i of the new organization (the one with phone newPhone(i)).
func (o *unanalyzedOrg) contactID(t *testing.T, i int) uuid.UUID {
	var id uuid.UUID
	require.NoError(t, o.pool.QueryRow(context.Background(), `SELECT id FROM contacts WHERE organization_id = $1 AND phone = $2`,
		o.org, newPhone(i)).Scan(&id))
	return id
}

// fill inserts n contacts of org as a list import leaves them: phones prefix+i, distinct
// creation times, ids made as ids says, the import's id on each.
func fill(ctx context.Context, pool *pgxpool.Pool, ids idKind, org uuid.UUID, prefix, tag string, n int) error {
	id := `gen_random_uuid()`
	if ids == timeOrderedIDs {
		id = `(lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' ||
			substr(md5(random()::text), 1, 3) || '8' || substr(md5(random()::text), 1, 15))::uuid`
	}
	_, err := pool.Exec(ctx, `
		INSERT INTO contacts (id, organization_id, phone, email, first_name, last_name, tags, is_textable,
			is_opted_in, opted_out_at, timezone, created_at, updated_at, import_id)
		SELECT `+id+`, $1, $2 || lpad(i::text, 7, '0'), CASE WHEN i % 20 = 0 THEN 'c' || i || '@example.com' END,
			'First' || i, 'Last' || i % 100, ARRAY[$3], CASE WHEN i % 50 <> 0 THEN true END,
			i % 100 <> 0, CASE WHEN i % 100 = 0 THEN t END, 'America/New_York', t, t, (SELECT gen_random_uuid())
		FROM generate_series(1, $4::int) AS i, LATERAL (SELECT now() - interval '1 day' + i * interval '1 ms') AS c(t)`,
		org, prefix, tag, n)
	return err
}

// hotCall is one call of the store on a hot path; rows is how many rows it asks for (keys
// looked up, or the rows of a page or batch), which bounds what each of its statements reads.
type hotCall struct {
	name string
	rows int
	run  func(t *testing.T, st *store.Store)
}

// buffersPerRow and buffersPerStatement bound a statement's reads: a probe of a unique index
// descends it (a few pages) and reads one heap page; an index walk reads at most a heap page
// per row and an index page per many rows; a write also updates each of the table's nine
// indexes. A plan that reads the organization reads hundreds.
const (
	buffersPerRow       = 4
	buffersPerStatement = 64
)

func hotCalls(o *unanalyzedOrg) []hotCall {
	ctx := context.Background()
	org := o.org
	idOf := o.contactID
	sendableAfter := func(t *testing.T, n int) uuid.UUID {
		var id uuid.UUID
		require.NoError(t, o.pool.QueryRow(ctx, `SELECT id FROM contacts WHERE organization_id = $1
			AND phone IS NOT NULL AND is_opted_in AND is_textable ORDER BY id OFFSET $2 LIMIT 1`, org, n).Scan(&id))
		return id
	}
	var phones []string
	for i := range 18 {
		phones = append(phones, newPhone(i*997%newOrgContacts+1))
	}
	phones = append(phones, "+19995550100", "+19995550101") // no contact has these
	const batch = 50
	str := func(s string) *string { return &s }
	yes := true
	no := false

	return append(append(consentCalls(o), importedHistoryCalls(o)...), []hotCall{
		{"SendabilityByPhone", len(phones), func(t *testing.T, st *store.Store) {
			found, err := st.SendabilityByPhone(ctx, org, phones)
			require.NoError(t, err)
			assert.Len(t, found, 18)
		}},
		{"GetByPhone", 1, func(t *testing.T, st *store.Store) {
			c, err := st.GetByPhone(ctx, org, newPhone(12345))
			require.NoError(t, err)
			assert.Equal(t, "First12345", c.FirstName)
		}},
		{"Get", 1, func(t *testing.T, st *store.Store) {
			_, err := st.Get(ctx, org, idOf(t, 777))
			require.NoError(t, err)
		}},
		{"MarkTextable (an inbound message)", 1, func(t *testing.T, st *store.Store) {
			id, err := st.MarkTextable(ctx, org, newPhone(pendingForMark))
			require.NoError(t, err)
			assert.Equal(t, idOf(t, pendingForMark), id)
		}},
		{"SetTextable (a lookup's result)", 1, func(t *testing.T, st *store.Store) {
			changed, err := st.SetTextable(ctx, org, idOf(t, pendingForTextable), newPhone(pendingForTextable), true)
			require.NoError(t, err)
			assert.True(t, changed)
		}},
		{"SetConsent (an opt-out)", 1, func(t *testing.T, st *store.Store) {
			res, err := st.SetConsent(ctx, org, store.ConsentChange{Phone: newPhone(4242), Origin: store.ParseSource("keyword:STOP")}, noLookups{})
			require.NoError(t, err)
			assert.True(t, res.Changed)
		}},
		{"CreateOrMerge of a new contact", 2, func(t *testing.T, st *store.Store) {
			_, created, err := st.CreateOrMerge(ctx, org, store.Changes{Phone: str("+16469990001"), Email: str("new@example.com")}, noLookups{}, store.Origin{Source: store.SourceAPI})
			require.NoError(t, err)
			assert.True(t, created)
		}},
		{"CreateOrMerge into the contact with the phone and email", 2, func(t *testing.T, st *store.Store) {
			c, created, err := st.CreateOrMerge(ctx, org, store.Changes{Phone: str(newPhone(340)), Email: str(newEmail(340)),
				City: str("Albany")}, noLookups{}, store.Origin{Source: store.SourceAPI})
			require.NoError(t, err)
			assert.False(t, created)
			assert.Equal(t, "Albany", c.City)
		}},
		{"CreateOrMerge of one contact's phone and another's email", 2, func(t *testing.T, st *store.Store) {
			_, _, err := st.CreateOrMerge(ctx, org, store.Changes{Phone: str(newPhone(360)), Email: str(newEmail(380))}, noLookups{}, store.Origin{Source: store.SourceAPI})
			require.ErrorIs(t, err, store.ErrAmbiguous)
		}},
		{"Update", 1, func(t *testing.T, st *store.Store) {
			c, err := st.Update(ctx, org, idOf(t, 9876), store.Changes{LastName: str("Renamed")}, noLookups{})
			require.NoError(t, err)
			assert.Equal(t, "Renamed", c.LastName)
		}},
		{"Delete", 1, func(t *testing.T, st *store.Store) {
			require.NoError(t, st.Delete(ctx, org, idOf(t, 19999)))
		}},
		{"AudienceBatch, the first", batch, func(t *testing.T, st *store.Store) {
			m, err := st.AudienceBatch(ctx, org, store.Filter{}, uuid.Nil, batch)
			require.NoError(t, err)
			assert.Len(t, m, batch)
		}},
		{"AudienceBatch, a later one", batch, func(t *testing.T, st *store.Store) {
			m, err := st.AudienceBatch(ctx, org, store.Filter{}, sendableAfter(t, 10_000), batch)
			require.NoError(t, err)
			assert.Len(t, m, batch)
		}},
		{"AudienceBatch of the list's tag", batch, func(t *testing.T, st *store.Store) {
			m, err := st.AudienceBatch(ctx, org, store.Filter{Tags: []string{"e2e"}}, sendableAfter(t, 5_000), batch)
			require.NoError(t, err)
			assert.Len(t, m, batch)
		}},
		{"List, the default page", 51, func(t *testing.T, st *store.Store) {
			items, more, err := st.List(ctx, org, store.Page{Sort: store.SortUpdatedAt, Limit: 50})
			require.NoError(t, err)
			assert.Len(t, items, 50)
			assert.True(t, more)
		}},
		{"List, a page after a cursor", 51, func(t *testing.T, st *store.Store) {
			var k store.Key
			require.NoError(t, o.pool.QueryRow(ctx, `SELECT updated_at, id FROM contacts WHERE organization_id = $1
				ORDER BY updated_at DESC, id DESC OFFSET 5000 LIMIT 1`, org).Scan(&k.At, &k.ID))
			items, _, err := st.List(ctx, org, store.Page{Sort: store.SortUpdatedAt, Limit: 50, After: &k})
			require.NoError(t, err)
			assert.Len(t, items, 50)
		}},
		{"List by creation", 51, func(t *testing.T, st *store.Store) {
			items, _, err := st.List(ctx, org, store.Page{Sort: store.SortCreatedAt, Limit: 50})
			require.NoError(t, err)
			assert.Len(t, items, 50)
		}},
		{"List of textable, opted-in contacts", 51, func(t *testing.T, st *store.Store) {
			items, _, err := st.List(ctx, org, store.Page{Sort: store.SortUpdatedAt, Limit: 50,
				Filter: store.Filter{IsTextable: &yes, OptedOut: &no}})
			require.NoError(t, err)
			assert.Len(t, items, 50)
		}},
	}...)
}

// check runs c through the recording pool, then explains each of its statements on contacts
// and consent_events as a custom and as a generic plan, in the order and with the settings the call ran them.
func (o *unanalyzedOrg) check(t *testing.T, c hotCall) {
	o.rec.Start()
	c.run(t, store.New(o.traced, o.inOrder))
	stmts := o.rec.Stop()
	budget := buffersPerRow*c.rows + buffersPerStatement
	checked := 0
	for _, mode := range pgtest.PlanModes {
		for _, p := range pgtest.Explain(t, o.pool, stmts, mode, onContactTables) {
			checked++
			buffers, summary := p.Plan.Buffers(), p.Plan.Summary()
			t.Logf("%s: %d buffers (at most %d): %s", mode, buffers, budget, summary)
			assert.LessOrEqual(t, buffers, budget, "%s of\n%s\nreads %d buffers (at most %d): %s",
				mode, p.SQL, buffers, budget, summary)
		}
	}
	require.NotZero(t, checked, "the call ran no statement on contacts or consent_events")
}

// onContactTables picks the statements on contacts and consent_events out of a call's.
var onContactTables = regexp.MustCompile(`(?i)\b(from|update|into)\s+(contacts|consent_events)\b`)

// noLookups queues no phone lookup.
type noLookups struct{}

func (noLookups) EnqueueTx(context.Context, pgx.Tx, uuid.UUID, uuid.UUID, string, time.Time) error {
	return nil
}
