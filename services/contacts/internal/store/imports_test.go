package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// noImportJob stages an import without queuing its merge.
type noImportJob struct{}

func (noImportJob) EnqueueImportTx(context.Context, pgx.Tx, uuid.UUID, uuid.UUID) error { return nil }

// stage stages an import of a file of one column, phone, with rows, without queuing its merge.
func stage(t *testing.T, st *store.Store, org uuid.UUID, rows []store.ImportRow) store.Import {
	t.Helper()
	imp, err := st.StageImport(context.Background(), org, []string{"phone"}, func() (store.ImportRow, bool, error) {
		if len(rows) == 0 {
			return store.ImportRow{}, false, nil
		}
		r := rows[0]
		rows = rows[1:]
		return r, true, nil
	}, noImportJob{}, 0)
	require.NoError(t, err)
	return imp
}

// An import whose job gives up is failed once, and that is published once, with its counts,
// for the webhooks' import.completed.
func TestFailedImportIsPublishedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	st := newStore(t, pool)
	org := uuid.New()
	imp := stage(t, st, org, []store.ImportRow{{Cells: []string{"x"}, Reason: "phone: not a US phone number"}, {Cells: []string{"y"}, Reason: "phone: not a US phone number"}})

	require.NoError(t, st.FailImport(ctx, org, imp.ID))
	require.NoError(t, st.FailImport(ctx, org, imp.ID), "failing it again changes nothing")
	require.NoError(t, st.FailImport(ctx, uuid.New(), imp.ID), "another organization's id is no import")

	rs, err := pool.Query(ctx, `SELECT payload FROM outbox WHERE event_type = 'contact.import_finished'`)
	require.NoError(t, err)
	payloads, err := pgx.CollectRows(rs, pgx.RowTo[[]byte])
	require.NoError(t, err)
	require.Len(t, payloads, 1)
	var ev eventsv1.ContactImportFinished
	require.NoError(t, proto.Unmarshal(payloads[0], &ev))
	assert.Equal(t, imp.ID.String(), ev.GetImportId())
	assert.Equal(t, "failed", ev.GetStatus())
	assert.EqualValues(t, 2, ev.GetTotal())
	assert.EqualValues(t, 2, ev.GetRejected())
	assert.NotNil(t, ev.GetCompletedAt())
}

// noLookupJob merges an import without queuing its lookups' job.
type noLookupJob struct{}

func (noLookupJob) EnqueueLookupBatchTx(context.Context, pgx.Tx, uuid.UUID, uuid.UUID, int32) error {
	return nil
}

// An import's pending lookups are what its batches queued less what their jobs finished; a
// job that reports the same lookups done again (a retry) takes nothing more off.
func TestImportLookupsPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t, newPool(t))
	org := uuid.New()
	var rows []store.ImportRow
	for _, p := range []string{"+12025550101", "+12025550102", "+12025550103"} {
		rows = append(rows, store.ImportRow{Changes: store.Changes{Phone: &p}, Cells: []string{p}})
	}
	imp := stage(t, st, org, rows)
	progress, err := st.MergeImportBatch(ctx, org, imp.ID, noLookupJob{}, func(error) (string, bool) { return "", false })
	require.NoError(t, err)
	require.Equal(t, store.ImportDone, progress)
	got, err := st.GetImport(ctx, org, imp.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 3, got.Created)
	assert.EqualValues(t, 3, got.LookupsPending)

	reqs, err := st.ImportLookups(ctx, org, imp.ID, 1)
	require.NoError(t, err)
	require.Len(t, reqs, 3)
	done := []uuid.UUID{reqs[0].Contact, reqs[1].Contact}
	for range 2 {
		require.NoError(t, st.DoneImportLookups(ctx, org, imp.ID, 1, done))
		got, err = st.GetImport(ctx, org, imp.ID)
		require.NoError(t, err)
		assert.EqualValues(t, 1, got.LookupsPending)
	}
}
