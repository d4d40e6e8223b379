package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/polls/internal/questions"
	"github.com/chorus-sms/chorus/services/polls/internal/store"
	"github.com/chorus-sms/chorus/services/polls/migrations"
)

// A participant silent for longer than its poll's participantTimeoutHours is terminated; one
// heard from within it is not.
func TestTerminateSilent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...))
	org, now := uuid.New(), time.Now().UTC()
	p := store.Poll{ID: uuid.New(), OrgID: org, Name: "p", Status: store.StatusActive, MaxReasks: 1, TimeoutHours: 1,
		Questions: []questions.Question{{Number: 1, Text: "q", Type: questions.OpenEnded, ResponseCode: "r"}}, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &p) }))
	require.NoError(t, st.AddParticipants(ctx, org, p.ID, []store.NewParticipant{
		{ContactID: uuid.New(), Phone: "+12025550100", Member: []byte(`{}`)},
		{ContactID: uuid.New(), Phone: "+12025550101", Member: []byte(`{}`)},
	}))
	var silent uuid.UUID
	for _, at := range []time.Time{now.Add(-3 * time.Second), now.Add(-time.Second)} {
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			b, err := st.BeginBatch(ctx, tx, org, p.ID, 1, at)
			require.Len(t, b, 1)
			if silent == uuid.Nil {
				silent = b[0].Contact
			}
			return err
		}))
	}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		ended, orgs, err := st.TerminateSilent(ctx, tx, 2*time.Second, now, 10)
		require.NoError(t, err)
		require.Len(t, ended, 1)
		require.Equal(t, silent, ended[0].Contact)
		require.Equal(t, []uuid.UUID{org}, orgs)
		return nil
	}))
}

// A contact waiting in a poll while in progress in another begins once free, oldest poll
// first, and only in an active poll whose start placed its hold.
func TestBeginFree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...))
	org, contact, now := uuid.New(), uuid.New(), time.Now().UTC()
	var polls []uuid.UUID
	for i := range 3 {
		p := store.Poll{ID: uuid.New(), OrgID: org, Name: "p", Status: store.StatusActive, MaxReasks: 1, TimeoutHours: 1,
			Questions: []questions.Question{{Number: 1, Text: "q", Type: questions.OpenEnded, ResponseCode: "r"}},
			CreatedAt: now, UpdatedAt: now, StartedAt: ptr(now.Add(time.Duration(i) * time.Second))}
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &p) }))
		require.NoError(t, st.AddParticipants(ctx, org, p.ID, []store.NewParticipant{{ContactID: contact, Phone: "+12025550100", Member: []byte(`{}`)}}))
		if i < 2 { // the third is still storing its audience
			require.NoError(t, st.StartSending(ctx, org, p.ID, "UTC"))
		}
		polls = append(polls, p.ID)
	}
	begin := func() []store.Begun {
		var b []store.Begun
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) (err error) {
			b, err = st.BeginFree(ctx, tx, 10, now)
			return err
		}))
		return b
	}
	first := begin()
	require.Len(t, first, 1)
	require.Equal(t, polls[0], first[0].Poll, "the oldest poll first")
	require.Empty(t, begin(), "in progress in the first: the others wait")
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		_, err := st.TerminatePoll(ctx, tx, org, polls[0], now)
		return err
	}))
	second := begin()
	require.Len(t, second, 1)
	require.Equal(t, polls[1], second[0].Poll)
}

func ptr[T any](v T) *T { return &v }

// A transaction reads its poll on its own connection: with every connection of the pool held
// by transactions (a full round of step jobs and the reply consumer), each still reads its
// poll instead of waiting for a connection none of them will give back.
func TestGetTxNeedsNoSecondConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.OneConnection(t, pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...)))
	org, now := uuid.New(), time.Now().UTC()
	p := store.Poll{ID: uuid.New(), OrgID: org, Name: "p", Status: store.StatusActive, MaxReasks: 1, TimeoutHours: 1,
		Questions: []questions.Question{{Number: 1, Text: "q", Type: questions.OpenEnded, ResponseCode: "r"}}, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &p) }))

	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	require.NoError(t, st.InTx(short, func(tx pgx.Tx) error {
		got, err := st.GetTx(short, tx, org, p.ID)
		require.Equal(t, p.Name, got.Name)
		return err
	}))
}

// Inbound messages read as replies are forgotten once older than the cutoff, oldest first,
// limit at a time; newer ones are still recognized.
func TestPruneHandled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...)
	st := store.New(pool)
	org := uuid.New()
	old, recent := uuid.New(), uuid.New()
	for _, m := range []uuid.UUID{old, recent} {
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			first, err := st.FirstHandling(ctx, tx, org, m)
			require.True(t, first)
			return err
		}))
	}
	_, err := pool.Exec(ctx, `UPDATE handled_inbound SET handled_at = now() - interval '9 days' WHERE message_id = $1`, old)
	require.NoError(t, err)

	n, err := st.PruneHandled(ctx, time.Now().Add(-8*24*time.Hour), 10)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		first, err := st.FirstHandling(ctx, tx, org, recent)
		require.False(t, first, "the recent one is still recognized")
		return err
	}))
}
