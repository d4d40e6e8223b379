package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
	"github.com/chorus-sms/chorus/services/campaigns/migrations"
)

// 5% each, rounded down: fewer than 20 recipients give empty samples.
func TestSampleSizes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ n, a, b int32 }{
		{0, 0, 0}, {1, 0, 0}, {3, 0, 0}, {19, 0, 0}, {20, 1, 1}, {39, 1, 1}, {40, 2, 2},
		{100, 5, 5}, {1000, 50, 50}, {1019, 50, 50}, {1_000_000, 50_000, 50_000},
	} {
		a, b := store.SampleSizes(c.n)
		assert.Equal(t, [2]int32{c.a, c.b}, [2]int32{a, b}, "n=%d", c.n)
	}
}

// The higher reply rate wins; a tie, nothing sent included, goes to A.
func TestLeaderTieGoesToA(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		t    store.AbTest
		want string
	}{
		{store.AbTest{}, store.VariantA},
		{store.AbTest{ASent: 10, AReplies: 1, BSent: 10, BReplies: 1}, store.VariantA},
		{store.AbTest{ASent: 10, AReplies: 1, BSent: 5, BReplies: 1}, store.VariantB},
		{store.AbTest{ASent: 10, AReplies: 3, BSent: 2, BReplies: 1}, store.VariantB},
		{store.AbTest{ASent: 0, AReplies: 0, BSent: 5, BReplies: 1}, store.VariantB},
		{store.AbTest{ASent: 2, AReplies: 1, BSent: 0, BReplies: 0}, store.VariantA},
	} {
		assert.Equal(t, c.want, c.t.Leader(), "%+v", c.t)
	}
}

func newStore(t *testing.T) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...)
	return store.New(pool), pool
}

// abCampaign stores a sending A/B campaign with n sendable recipients (variant A costs 1,
// variant B 2 credits each) and one unsendable; it returns the campaign and the phones.
func abCampaign(t *testing.T, st *store.Store, n int) (store.Campaign, []string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	a, b := "A {{firstName}}", "B {{firstName}}"
	c := store.Campaign{ID: uuid.New(), OrgID: uuid.New(), Name: "ab", Status: store.StatusSending, Channel: "text", ForceRoute: "AUTO",
		IsAbTest: true, VariantA: &a, VariantB: &b, AbTestWaitMinutes: 60, CreatedAt: now, UpdatedAt: now, StartedAt: &now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &c) }))
	var rs []store.Recipient
	var phones []string
	for i := range n + 1 {
		p := fmt.Sprintf("+1202555%04d", i)
		bodyB, creditsB := "B "+p, int32(2)
		rs = append(rs, store.Recipient{ContactID: uuid.New(), Phone: p, Body: "A " + p, Credits: 1, BodyB: &bodyB, CreditsB: &creditsB, Unsendable: unsentIf(i == n)})
		if i < n {
			phones = append(phones, p)
		}
	}
	require.NoError(t, st.AddRecipients(ctx, c.OrgID, c.ID, rs))
	_, _, err := st.ResolveAudience(ctx, c.OrgID, c.ID)
	require.NoError(t, err)
	return c, phones
}

// variants reads each recipient's variant and body by phone.
func variants(t *testing.T, pool *pgxpool.Pool, campaign uuid.UUID) map[string][2]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT phone, coalesce(variant, ''), body FROM recipients WHERE campaign_id = $1`, campaign)
	require.NoError(t, err)
	out := map[string][2]string{}
	for rows.Next() {
		var p, v, body string
		require.NoError(t, rows.Scan(&p, &v, &body))
		out[p] = [2]string{v, body}
	}
	require.NoError(t, rows.Err())
	return out
}

// The samples are drawn once among the sendable recipients: a second draw (a retried job, a
// second replica) keeps the first; B's sample gets B's text; only the samples are queued
// before the decision; the hold covers the samples at their prices and the rest at B's. An
// audience too small for two samples is refused.
func TestDrawSamplesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newStore(t)
	c, phones := abCampaign(t, st, 40)

	first, err := st.DrawSamples(ctx, c.OrgID, c.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 2, first.ARecipients)
	assert.EqualValues(t, 2, first.BRecipients)
	drawn := variants(t, pool, c.ID)
	again, err := st.DrawSamples(ctx, c.OrgID, c.ID)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.Equal(t, drawn, variants(t, pool, c.ID), "the same draw")

	count := map[string]int{}
	for p, v := range drawn {
		count[v[0]]++
		switch v[0] {
		case store.VariantB:
			assert.Equal(t, "B "+p, v[1])
		default:
			assert.Equal(t, "A "+p, v[1])
		}
	}
	assert.Equal(t, map[string]int{"A": 2, "B": 2, "": 37}, count, "the unsendable one is never drawn")
	assert.Empty(t, drawn[fmt.Sprintf("+1202555%04d", len(phones))][0])

	assert.Len(t, unqueued(t, st, c.ID, true), 4)
	estimate, err := st.AbEstimate(ctx, c.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 2*1+2*2+36*2, estimate, "A's sample at 1, B's at 2, the rest at the dearer B")

	// 19 sendable recipients give empty 5% samples: refused (the campaign fails), nobody drawn.
	small, _ := abCampaign(t, st, 19)
	_, err = st.DrawSamples(ctx, small.OrgID, small.ID)
	require.ErrorIs(t, err, store.ErrAudienceTooSmall)
	for p, v := range variants(t, pool, small.ID) {
		assert.Empty(t, v[0], "nobody drawn: %s", p)
	}
	_, found, err := st.GetAbTest(ctx, small.OrgID, small.ID)
	require.NoError(t, err)
	assert.False(t, found)
}

// The decision waits for its time, is written once however many runs ask at once, gives the
// rest the winner's text, and does not change when later replies would change the leader;
// the campaign completes only once it is decided.
func TestDecideOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newStore(t)
	c, _ := abCampaign(t, st, 40)
	_, err := st.DrawSamples(ctx, c.OrgID, c.ID)
	require.NoError(t, err)
	drawn := variants(t, pool, c.ID)
	var aPhones, bPhones []string
	for p, v := range drawn {
		switch v[0] {
		case store.VariantA:
			aPhones = append(aPhones, p)
		case store.VariantB:
			bPhones = append(bPhones, p)
		}
	}
	inTx := func(fn func(pgx.Tx) error) { require.NoError(t, st.InTx(ctx, fn)) }
	// Both samples sent; one of B's recipients replies twice (counted once), a stranger once.
	for _, p := range append(aPhones, bPhones...) {
		inTx(func(tx pgx.Tx) error {
			_, err := st.ApplyStatus(ctx, tx, c.OrgID, c.ID, store.Who{Phone: p}, "sent", true)
			return err
		})
	}
	// The first reply names its contact, as messaging's events do (its phone is not read); the
	// second its phone, as events published before they did.
	var bContact uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT contact_id FROM recipients WHERE campaign_id = $1 AND phone = $2`, c.ID, bPhones[0]).Scan(&bContact))
	for _, who := range []store.Who{{Contact: bContact, Phone: "+19999999998"}, {Phone: bPhones[0]}, {Phone: "+19999999999"}} {
		inTx(func(tx pgx.Tx) error { return st.CountVariantReply(ctx, tx, c.OrgID, c.ID, who) })
	}
	got, _, err := st.GetAbTest(ctx, c.OrgID, c.ID)
	require.NoError(t, err)
	assert.Equal(t, [4]int32{2, 2, 0, 1}, [4]int32{got.ASent, got.BSent, got.AReplies, got.BReplies})

	winner, err := st.Decide(ctx, c.OrgID, c.ID, time.Now())
	require.NoError(t, err)
	assert.Empty(t, winner, "no decision time fixed yet")
	at, err := st.SetDecideAt(ctx, c.OrgID, c.ID, time.Now().Add(time.Hour))
	require.NoError(t, err)
	again, err := st.SetDecideAt(ctx, c.OrgID, c.ID, time.Now())
	require.NoError(t, err)
	assert.True(t, at.Equal(again), "fixed once")
	winner, err = st.Decide(ctx, c.OrgID, c.ID, time.Now())
	require.NoError(t, err)
	assert.Empty(t, winner, "too early")

	var wg sync.WaitGroup
	winners := make([]string, 8)
	for i := range winners {
		wg.Go(func() {
			w, err := st.Decide(ctx, c.OrgID, c.ID, at.Add(time.Duration(i)*time.Second))
			assert.NoError(t, err)
			winners[i] = w
		})
	}
	wg.Wait()
	for _, w := range winners {
		assert.Equal(t, store.VariantB, w)
	}
	decided, _, err := st.GetAbTest(ctx, c.OrgID, c.ID)
	require.NoError(t, err)
	require.NotNil(t, decided.DecidedAt)
	for p, v := range variants(t, pool, c.ID) {
		if v[0] == "" && p != fmt.Sprintf("+1202555%04d", 40) {
			assert.Equal(t, "B "+p, v[1], "the rest gets the winner's text")
		}
	}

	// A's recipients now reply more: the stored winner stands.
	for _, p := range aPhones {
		inTx(func(tx pgx.Tx) error { return st.CountVariantReply(ctx, tx, c.OrgID, c.ID, store.Who{Phone: p}) })
	}
	winner, err = st.Decide(ctx, c.OrgID, c.ID, at.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, store.VariantB, winner)
	final, _, err := st.GetAbTest(ctx, c.OrgID, c.ID)
	require.NoError(t, err)
	assert.True(t, decided.DecidedAt.Equal(*final.DecidedAt), "decided once")
}

// An A/B campaign whose every message has an outcome still waits for its decision before
// it completes (twenty recipients: one sample each, every message given an outcome).
func TestAbCampaignCompletesOnlyOnceDecided(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := newStore(t)
	c, phones := abCampaign(t, st, 20)
	drawn, err := st.DrawSamples(ctx, c.OrgID, c.ID)
	require.NoError(t, err)
	assert.Equal(t, [2]int32{1, 1}, [2]int32{drawn.ARecipients, drawn.BRecipients})
	for _, p := range phones {
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			_, err := st.ApplyStatus(ctx, tx, c.OrgID, c.ID, store.Who{Phone: p}, "delivered", true)
			return err
		}))
	}
	complete := func() *store.Campaign {
		var done *store.Campaign
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) (err error) { done, err = st.Complete(ctx, tx, c.OrgID, c.ID); return err }))
		return done
	}
	assert.Nil(t, complete(), "undecided")
	at, err := st.SetDecideAt(ctx, c.OrgID, c.ID, time.Now())
	require.NoError(t, err)
	winner, err := st.Decide(ctx, c.OrgID, c.ID, at)
	require.NoError(t, err)
	assert.Equal(t, store.VariantA, winner, "0 replies each: a tie")
	require.NotNil(t, complete())
}

// unsentIf is an unsendable reason when cond holds, else none.
func unsentIf(cond bool) string {
	if cond {
		return store.UnsentEmptyText
	}
	return ""
}
