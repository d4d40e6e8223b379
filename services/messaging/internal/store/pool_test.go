package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// A campaign's bulk hand-off retried (messaging committed, the campaign did not hear it) comes
// back with the same dedupe keys but new message ids, and from a pool its numbers picked anew:
// whether it comes before its batch became messages or after, the pool's numbers are counted
// each message once, so the "least busy" number is picked from what they really hold.
func TestRetriedBulkBatchIsCountedOnce(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	org := uuid.New()
	pool := []string{"+13125550100", "+13125550101"}
	ids := []uuid.UUID{uuid.New(), uuid.New()}
	batch := func(shift int) []*store.Message {
		msgs := make([]*store.Message, 10)
		for i := range msgs {
			k := (i + shift) % len(pool)
			msgs[i] = &store.Message{
				ID: uuid.Must(uuid.NewV7()), OrgID: org, Direction: store.Outgoing, ContactPhone: fmt.Sprintf("+1202555%04d", i),
				OurNumber: pool[k], PhoneNumberID: &ids[k], Body: "Hi", Status: store.StatusQueued, Provider: "sandbox",
				Credits: 1, SourceKind: store.SourceCampaign, SourceID: "c1", DedupeKey: fmt.Sprintf("c1:%d", i),
				CreatedAt: time.Now(),
			}
		}
		if shift == 0 { // the first try gives the first number 7 of 10, the retry 5
			for _, m := range msgs[:4] {
				m.OurNumber, m.PhoneNumberID = pool[0], &ids[0]
			}
		}
		return msgs
	}
	assigned := func() map[string]int {
		numbers, err := st.SourceNumbers(ctx, org, store.SourceCampaign, "c1")
		require.NoError(t, err)
		out := map[string]int{}
		for _, n := range numbers {
			out[n.Number] = n.Assigned
		}
		return out
	}
	want := map[string]int{pool[0]: 7, pool[1]: 3}

	require.NoError(t, st.InsertBulk(ctx, batch(0), time.Now()))
	require.NoError(t, st.InsertBulk(ctx, batch(1), time.Now()), "retried before it became messages")
	assert.Equal(t, want, assigned())

	created := 0
	for {
		var taken *store.TakenBulk
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			taken, err = st.ExpandBulk(ctx, tx, nil)
			return err
		}))
		if taken == nil {
			break
		}
		created += len(taken.Created)
	}
	assert.Equal(t, 10, created)
	require.NoError(t, st.InsertBulk(ctx, batch(1), time.Now()), "retried after")
	assert.Equal(t, want, assigned())

	// A batch of other recipients of the same campaign counts as ever.
	next := batch(0)
	for i, m := range next {
		m.DedupeKey = fmt.Sprintf("c1:%d", 100+i)
	}
	require.NoError(t, st.InsertBulk(ctx, next, time.Now()))
	assert.Equal(t, map[string]int{pool[0]: 14, pool[1]: 6}, assigned())
}
