package orgtable_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/orgtable"
	"github.com/chorus-sms/chorus/pkg/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var errMissing = errors.New("widget not found")

type widget struct {
	ID   uuid.UUID
	Name string
}

func scanWidget(row pgx.Row) (widget, error) {
	var w widget
	err := row.Scan(&w.ID, &w.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, errMissing
	}
	return w, err
}

// An organization reads its own rows only, one by id (with or without its lock) or all of
// them newest first; another organization's row is missing.
func TestTableReadsAnOrganizationsRows(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, `CREATE TABLE widgets (organization_id uuid, id uuid, name text, created_at timestamptz,
		PRIMARY KEY (organization_id, id))`)
	require.NoError(t, err)
	org, other := uuid.New(), uuid.New()
	first, second, foreign := uuid.New(), uuid.New(), uuid.New()
	now := time.Now()
	for _, r := range []struct {
		org, id uuid.UUID
		name    string
		at      time.Time
	}{{org, first, "first", now.Add(-time.Minute)}, {org, second, "second", now}, {other, foreign, "foreign", now}} {
		_, err := pool.Exec(ctx, `INSERT INTO widgets VALUES ($1, $2, $3, $4)`, r.org, r.id, r.name, r.at)
		require.NoError(t, err)
	}
	widgets := orgtable.New(pool, "widgets", "id, name", scanWidget)

	w, err := widgets.Get(ctx, org, first)
	require.NoError(t, err)
	assert.Equal(t, "first", w.Name)
	_, err = widgets.Get(ctx, org, foreign)
	assert.ErrorIs(t, err, errMissing)

	require.NoError(t, widgets.InTx(ctx, func(tx pgx.Tx) error {
		if w, err = widgets.Lock(ctx, tx, org, second); err != nil {
			return err
		}
		assert.Equal(t, "second", w.Name)
		w, err = widgets.GetTx(ctx, tx, org, first)
		assert.Equal(t, "first", w.Name)
		return err
	}))

	list, err := widgets.List(ctx, org)
	require.NoError(t, err)
	assert.Equal(t, []widget{{second, "second"}, {first, "first"}}, list)
}
