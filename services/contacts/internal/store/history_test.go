package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// noLookupBatches queues no import's lookups.
type noLookupBatches struct{}

func (noLookupBatches) EnqueueLookupBatchTx(context.Context, pgx.Tx, uuid.UUID, uuid.UUID, int32) error {
	return nil
}

// importPhones imports one contact per phone through an import's batch (the set-wise insert)
// and returns the import's id.
func importPhones(t *testing.T, st *store.Store, org uuid.UUID, phones ...string) uuid.UUID {
	t.Helper()
	rows := make([]store.ImportRow, len(phones))
	for i, p := range phones {
		rows[i] = store.ImportRow{Changes: store.Changes{Phone: &p}, Cells: []string{p}}
	}
	imp := stage(t, st, org, rows)
	p, err := st.MergeImportBatch(context.Background(), org, imp.ID, noLookupBatches{}, func(error) (string, bool) { return "", false })
	require.NoError(t, err)
	require.Equal(t, store.ImportDone, p)
	return imp.ID
}

// entryKind is an entry as the test compares it: whose, and what caused it.
type entryKind struct {
	Contact uuid.UUID
	OptedIn bool
	Source  string
	Import  *uuid.UUID
}

func kinds(entries []store.ConsentEntry) []entryKind {
	out := make([]entryKind, len(entries))
	for i, e := range entries {
		out[i] = entryKind{Contact: e.ContactID, OptedIn: e.OptedIn, Source: e.Source, Import: e.ImportID}
	}
	return out
}

// The creation entries of contacts an import's batch inserted (kept on their rows, not in
// consent_events) are in a contact's history and in the export where consent_events' entries
// would be: after an earlier creation, before a later opt-out, each once, whatever the
// export's batch size, though batch boundaries fall among contacts created at the same time.
func TestImportedContactsCreationEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	st := newStore(t, pool)
	org := uuid.New()
	contact := func(c store.Contact, _ bool, err error) uuid.UUID {
		t.Helper()
		require.NoError(t, err)
		return c.ID
	}
	str := func(s string) *string { return &s }

	first := contact(st.CreateOrMerge(ctx, org, store.Changes{Phone: str("+12025550170")}, noLookups{}, store.Origin{Source: store.SourceAPI}))
	imp := importPhones(t, st, org, "+12025550171", "+12025550172", "+12025550173", "+12025550174", "+12025550175")
	importPhones(t, st, uuid.New(), "+12025550176") // another organization's
	rows, err := pool.Query(ctx, `SELECT id FROM contacts WHERE organization_id = $1 AND id <> $2 ORDER BY created_at, id`, org, first)
	require.NoError(t, err)
	imported, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	require.Len(t, imported, 5)
	phones := map[uuid.UUID]string{}
	for _, id := range append([]uuid.UUID{first}, imported...) {
		c, err := st.Get(ctx, org, id)
		require.NoError(t, err)
		phones[id] = *c.Phone
	}
	_, err = st.SetConsent(ctx, org, store.ConsentChange{ContactID: imported[1], OccurredAt: time.Now(),
		Origin: store.ParseSource("keyword:STOP")}, noLookups{})
	require.NoError(t, err)
	last := contact(st.CreateOrMerge(ctx, org, store.Changes{Phone: str("+12025550177")}, noLookups{}, store.Origin{Source: store.SourceAPI}))

	want := []entryKind{{Contact: first, OptedIn: true, Source: store.SourceAPI}}
	for _, id := range imported {
		want = append(want, entryKind{Contact: id, OptedIn: true, Source: store.SourceImport, Import: &imp})
	}
	want = append(want, entryKind{Contact: imported[1], Source: "keyword"}, entryKind{Contact: last, OptedIn: true, Source: store.SourceAPI})
	from, to := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	for _, size := range []int{1000, 1, 2, 3} {
		store.SetExportBatch(st, size)
		var got []store.ConsentEntry
		require.NoError(t, st.ExportConsent(ctx, org, from, to, func(e store.ConsentEntry) error {
			got = append(got, e)
			return nil
		}))
		assert.Equal(t, want, kinds(got), "batches of %d", size)
		for _, e := range got[:7] {
			require.NotNil(t, e.Phone)
			assert.Equal(t, phones[e.ContactID], *e.Phone, "each entry with its contact's phone")
		}
	}

	// The opted-out imported contact's history, a page of one at a time: the opt-out, then
	// its creation by the import.
	var pages []store.ConsentEntry
	var before *store.HistoryKey
	for {
		page, more, err := st.ConsentHistory(ctx, org, imported[1], before, 1)
		require.NoError(t, err)
		pages = append(pages, page...)
		if !more {
			break
		}
		require.Len(t, page, 1)
		before = &store.HistoryKey{At: page[0].RecordedAt, ID: page[0].ID}
	}
	assert.Equal(t, []entryKind{
		{Contact: imported[1], Source: "keyword"},
		{Contact: imported[1], OptedIn: true, Source: store.SourceImport, Import: &imp},
	}, kinds(pages))
	assert.Equal(t, pages[1].OccurredAt, pages[1].RecordedAt, "the creation was recorded when it occurred")

	// Another organization's id is a missing contact; a deleted contact's history is gone.
	_, _, err = st.ConsentHistory(ctx, uuid.New(), imported[1], nil, 10)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, st.Delete(ctx, org, imported[1]))
	_, _, err = st.ConsentHistory(ctx, org, imported[1], nil, 10)
	require.ErrorIs(t, err, store.ErrNotFound)
	var left []store.ConsentEntry
	require.NoError(t, st.ExportConsent(ctx, org, from, to, func(e store.ConsentEntry) error {
		left = append(left, e)
		return nil
	}))
	assert.Equal(t, append(append([]entryKind{}, want[:2]...), append(want[3:6], want[7])...), kinds(left))
}
