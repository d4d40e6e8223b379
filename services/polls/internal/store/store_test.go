package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/polls/internal/questions"
	"github.com/chorus-sms/chorus/services/polls/internal/store"
	"github.com/chorus-sms/chorus/services/polls/internal/testdb"
)

// A participant silent for longer than its poll's participantTimeoutHours is terminated; one
// heard from within it is not.
func TestTerminateSilent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(testdb.Pool(t))
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
