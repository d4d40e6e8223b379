package deliver

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/webhooks/internal/signature"
	"github.com/chorus-sms/chorus/services/webhooks/internal/store"
)

// aged stores a delivery to endpoint created age ago in status, with one attempt made
// attemptAge ago (none when attemptAge is 0), and answers its id.
func (f *fixture) aged(t *testing.T, endpoint uuid.UUID, status string, age, attemptAge time.Duration) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	id := uuid.New()
	require.NoError(t, pgx.BeginFunc(ctx, f.store.Pool(), func(tx pgx.Tx) error {
		if _, err := store.InsertDeliveries(ctx, tx, f.org, id.String(), "message.received", []byte(`{}`),
			[]store.NewDelivery{{ID: id, Endpoint: endpoint}}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET status = $3, created_at = now() - $4::interval
			WHERE organization_id = $1 AND id = $2`, f.org, id, status, age); err != nil {
			return err
		}
		if attemptAge == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO attempts (organization_id, delivery_id, n, attempted_at, status_code, duration_ms)
			VALUES ($1, $2, 1, now() - $3::interval, 500, 3)`, f.org, id, attemptAge)
		return err
	}))
	return id
}

// kept answers which of ids still have their delivery row, and how many attempt rows remain
// of them.
func (f *fixture) kept(t *testing.T, ids ...uuid.UUID) (map[uuid.UUID]bool, int) {
	t.Helper()
	out := map[uuid.UUID]bool{}
	rows, err := f.store.Pool().Query(context.Background(), `SELECT id FROM deliveries WHERE organization_id = $1 AND id = ANY($2)`, f.org, ids)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	for _, id := range got {
		out[id] = true
	}
	var attempts int
	require.NoError(t, f.store.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM attempts WHERE organization_id = $1 AND delivery_id = ANY($2)`, f.org, ids).Scan(&attempts))
	return out, attempts
}

// Deliveries past the retention are deleted with their attempts, in batches, but never a
// pending one (however old: its retries are still due) nor one retried by hand lately.
func TestPruneDeletesOldFinishedDeliveries(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := context.Background()
	ep := store.Endpoint{OrgID: f.org, ID: uuid.New(), URL: "https://example.com/hook", Events: []string{"message.received"}, Key: signature.NewKey()}
	require.NoError(t, f.store.CreateEndpoint(ctx, &ep))
	day := 24 * time.Hour
	var old []uuid.UUID
	for range 5 {
		old = append(old, f.aged(t, ep.ID, store.StatusSucceeded, 40*day, 40*day))
	}
	failed := f.aged(t, ep.ID, store.StatusFailed, 31*day, 0)
	pending := f.aged(t, ep.ID, store.StatusPending, 40*day, 40*day)
	retried := f.aged(t, ep.ID, store.StatusFailed, 40*day, time.Hour)
	recent := f.aged(t, ep.ID, store.StatusSucceeded, 29*day, 29*day)

	n, err := f.store.PruneDeliveries(ctx, time.Now().Add(-30*day), 2)
	require.NoError(t, err)
	assert.EqualValues(t, 6, n, "the five old successes and the old failure, two at a time")
	all := append(append([]uuid.UUID{}, old...), failed, pending, retried, recent)
	kept, attempts := f.kept(t, all...)
	assert.Equal(t, map[uuid.UUID]bool{pending: true, retried: true, recent: true}, kept)
	assert.Equal(t, 3, attempts, "the deleted deliveries' attempts went with them")
}

// The runner sweeps periodically with its retention: an old finished delivery disappears from
// the endpoint's list, a pending one stays.
func TestRunnerSweepsPastRetention(t *testing.T) {
	f := newFixture(t, Config{Retention: time.Hour, PruneEvery: 100 * time.Millisecond})
	ctx := context.Background()
	ep := store.Endpoint{OrgID: f.org, ID: uuid.New(), URL: "https://example.com/hook", Events: []string{"message.received"}, Key: signature.NewKey()}
	require.NoError(t, f.store.CreateEndpoint(ctx, &ep))
	pending := f.aged(t, ep.ID, store.StatusPending, 2*time.Hour, 0)
	f.aged(t, ep.ID, store.StatusSucceeded, 2*time.Hour, 2*time.Hour)
	waitFor(t, "the old success swept", func() bool {
		ds, err := f.store.ListDeliveries(ctx, f.org, ep.ID, 10)
		require.NoError(t, err)
		return len(ds) == 1
	})
	assert.Equal(t, pending, f.delivery(t, ep.ID).ID)
}
