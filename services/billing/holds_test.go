package billing_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"

	"github.com/chorus-sms/chorus/pkg/apierr"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

func placeHold(e *env, org, hold uuid.UUID, credits int32) (*billingv1.PlaceHoldResponse, error) {
	return e.c.PlaceHold(as(org), &billingv1.PlaceHoldRequest{HoldId: hold.String(), Credits: credits})
}

func postHold(e *env, org, hold, message uuid.UUID, credits int32) (*billingv1.PostHoldResponse, error) {
	return e.c.PostHold(as(org), &billingv1.PostHoldRequest{HoldId: hold.String(), MessageId: message.String(), Credits: credits})
}

func releaseHold(e *env, org, hold uuid.UUID) (*billingv1.ReleaseHoldResponse, error) {
	return e.c.ReleaseHold(as(org), &billingv1.ReleaseHoldRequest{HoldId: hold.String()})
}

func TestHoldPlacePostRelease(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "per_message", "")
	e.grant(t, org, 100, false)
	hold := uuid.New()

	placed, err := placeHold(e, org, hold, 30)
	require.NoError(t, err)
	assert.Equal(t, int32(30), placed.GetHold().GetHeld())
	assert.Equal(t, int32(30), placed.GetHold().GetRemaining())
	assert.Equal(t, int32(70), placed.GetCredits().GetAvailable(), "held credits leave the balance")
	again, err := placeHold(e, org, hold, 30)
	require.NoError(t, err, "placing the same hold again is a no-op")
	assert.Equal(t, int32(70), again.GetCredits().GetAvailable())
	_, err = placeHold(e, org, hold, 31)
	assertReason(t, err, codes.AlreadyExists, apierr.ReasonConflict, "the hold id was placed for another amount")
	assert.Equal(t, 1, e.ledgerRows(t, org, "hold"))

	m1 := uuid.New()
	posted, err := postHold(e, org, hold, m1, 10)
	require.NoError(t, err)
	assert.Equal(t, int32(10), posted.GetCharged())
	assert.Equal(t, int32(20), posted.GetHold().GetRemaining())
	for range 2 {
		dup, err := postHold(e, org, hold, m1, 10)
		require.NoError(t, err)
		assert.Equal(t, int32(10), dup.GetCharged(), "a repeated post answers the first")
		assert.Equal(t, int32(20), dup.GetHold().GetRemaining(), "and takes nothing more")
	}
	_, err = charge(e, org, m1, 10)
	require.NoError(t, err, "charging a posted message answers the post")
	assert.Equal(t, int32(70), e.credits(t, org).GetAvailable(), "a message is debited once, by post or charge")

	m2 := uuid.New()
	_, err = postHold(e, org, hold, m2, 21)
	assertReason(t, err, codes.FailedPrecondition, "HOLD_EXHAUSTED", "a post cannot exceed what the hold has left")
	posted, err = postHold(e, org, hold, m2, 5)
	require.NoError(t, err)
	assert.Equal(t, int32(15), posted.GetHold().GetRemaining())
	assert.Equal(t, 2, e.ledgerRows(t, org, "debit"))

	released, err := releaseHold(e, org, hold)
	require.NoError(t, err)
	assert.Equal(t, int32(15), released.GetReturned())
	assert.True(t, released.GetHold().GetReleased())
	assert.Zero(t, released.GetHold().GetRemaining())
	assert.Equal(t, int32(85), released.GetCredits().GetAvailable(), "100 - 10 - 5 posted")
	twice, err := releaseHold(e, org, hold)
	require.NoError(t, err, "releasing twice is a no-op")
	assert.Equal(t, int32(15), twice.GetReturned(), "and answers the first release")
	assert.Equal(t, int32(85), twice.GetCredits().GetAvailable())
	assert.Equal(t, 1, e.ledgerRows(t, org, "release"))

	_, err = postHold(e, org, hold, uuid.New(), 1)
	assertReason(t, err, codes.FailedPrecondition, "HOLD_RELEASED")
	dup, err := postHold(e, org, hold, m2, 5)
	require.NoError(t, err, "a post made before the release still answers after it")
	assert.Equal(t, int32(5), dup.GetCharged())
	e.assertLedgerSums(t, org)
}

func TestPlaceHoldWithoutTheCreditsFailsAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "per_message", "")
	e.grant(t, org, 10, false)
	hold := uuid.New()
	_, err := placeHold(e, org, hold, 11)
	assertReason(t, err, codes.FailedPrecondition, "INSUFFICIENT_CREDITS")
	assert.Equal(t, int32(10), e.credits(t, org).GetAvailable())
	_, err = postHold(e, org, hold, uuid.New(), 1)
	assertReason(t, err, codes.NotFound, apierr.ReasonNotFound, "no hold was created")
	_, err = placeHold(e, uuid.New(), uuid.New(), 1)
	assertReason(t, err, codes.FailedPrecondition, "INSUFFICIENT_CREDITS", "no account, no credits")
	e.assertLedgerSums(t, org)
}

// A full_service hold takes included credits first, and its release gives each kind back.
func TestFullServiceHoldReturnsEachKindOfCredit(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "full_service", "")
	e.grant(t, org, 10, true)
	e.grant(t, org, 10, false)
	hold := uuid.New()
	placed, err := placeHold(e, org, hold, 15)
	require.NoError(t, err)
	assert.Zero(t, placed.GetCredits().GetIncluded())
	assert.Equal(t, int32(5), placed.GetCredits().GetAvailable())

	_, err = postHold(e, org, hold, uuid.New(), 6)
	require.NoError(t, err, "spends 6 of the 10 included")
	released, err := releaseHold(e, org, hold)
	require.NoError(t, err)
	assert.Equal(t, int32(9), released.GetReturned())
	assert.Equal(t, int32(4), released.GetCredits().GetIncluded(), "the 4 included credits left go back to included")
	assert.Equal(t, int32(10), released.GetCredits().GetAvailable(), "the 5 purchased ones to available")
	e.assertLedgerSums(t, org)
}

func TestUnlimitedHoldsReserveNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "unlimited", "")
	hold := uuid.New()
	placed, err := placeHold(e, org, hold, 1000)
	require.NoError(t, err)
	assert.Zero(t, placed.GetHold().GetHeld())
	posted, err := postHold(e, org, hold, uuid.New(), 5)
	require.NoError(t, err)
	assert.Zero(t, posted.GetCharged())
	_, err = releaseHold(e, org, hold)
	require.NoError(t, err)
	assert.Zero(t, e.ledgerRows(t, org, "debit"))
	e.assertLedgerSums(t, org)
}

// 50 concurrent 1-credit posts against a 20-credit hold: exactly 20 pass.
func TestConcurrentPostsNeverExceedTheHold(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "per_message", "")
	e.grant(t, org, 25, false)
	hold := uuid.New()
	_, err := placeHold(e, org, hold, 20)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = postHold(e, org, hold, uuid.New(), 1)
		})
	}
	wg.Wait()
	assert.Equal(t, map[string]int{"": 20, "HOLD_EXHAUSTED": 30}, tally(errs))
	released, err := releaseHold(e, org, hold)
	require.NoError(t, err)
	assert.Zero(t, released.GetReturned())
	assert.Equal(t, int32(5), released.GetCredits().GetAvailable())
	e.assertLedgerSums(t, org)
}

func TestHoldValidation(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := uuid.New()
	_, err := e.c.PlaceHold(as(org), &billingv1.PlaceHoldRequest{HoldId: "h", Credits: 0})
	assert.ElementsMatch(t, []string{"holdId", "credits"}, badFields(t, err))
	_, err = e.c.PostHold(as(org), &billingv1.PostHoldRequest{HoldId: "h", MessageId: "m", Credits: -1})
	assert.ElementsMatch(t, []string{"holdId", "messageId", "credits"}, badFields(t, err))
	_, err = e.c.ReleaseHold(as(org), &billingv1.ReleaseHoldRequest{})
	assert.Equal(t, []string{"holdId"}, badFields(t, err))
	_, err = releaseHold(e, org, uuid.New())
	assertReason(t, err, codes.NotFound, apierr.ReasonNotFound)
}

// PostHolds answers each post of a batch as PostHold would, in order: each message is debited
// once (a message named twice in the batch, or posted before, is charged once), a post the
// hold cannot pay is refused with its reason while the others go through, and another
// organization's hold is missing.
func TestPostHoldsPostsEachMessageOnce(t *testing.T) {
	t.Parallel()
	e := start(t)
	org, other := e.account(t, "per_message", ""), e.account(t, "per_message", "")
	e.grant(t, org, 100, false)
	e.grant(t, other, 100, false)
	hold, released, theirs := uuid.New(), uuid.New(), uuid.New()
	for _, h := range []struct {
		org, id uuid.UUID
		credits int32
	}{{org, hold, 4}, {org, released, 2}, {other, theirs, 5}} {
		_, err := placeHold(e, h.org, h.id, h.credits)
		require.NoError(t, err)
	}
	_, err := releaseHold(e, org, released)
	require.NoError(t, err)
	before, again := uuid.New(), uuid.New()
	_, err = postHold(e, org, hold, before, 1)
	require.NoError(t, err)

	post := func(hold, message uuid.UUID, credits int32) *billingv1.PostHoldRequest {
		return &billingv1.PostHoldRequest{HoldId: hold.String(), MessageId: message.String(), Credits: credits}
	}
	res, err := e.c.PostHolds(as(org), &billingv1.PostHoldsRequest{Posts: []*billingv1.PostHoldRequest{
		post(hold, before, 1),         // posted before: answered, not charged again
		post(hold, again, 2),          // 3 left: posted
		post(hold, again, 2),          // the same message again in the batch: once
		post(hold, uuid.New(), 2),     // 1 left: exhausted
		post(hold, uuid.New(), 1),     // a smaller one after it: posted, as one call each would
		post(released, uuid.New(), 1), // released
		post(theirs, uuid.New(), 1),   // another organization's: missing
		post(hold, uuid.New(), 0),     // free
	}})
	require.NoError(t, err)
	var got []string
	var charged []int32
	for _, r := range res.GetResults() {
		got, charged = append(got, r.GetRefused()), append(charged, r.GetCharged())
	}
	assert.Equal(t, []string{"", "", "", "HOLD_EXHAUSTED", "", "HOLD_RELEASED", "HOLD_NOT_FOUND", ""}, got)
	assert.Equal(t, []int32{1, 2, 2, 0, 1, 0, 0, 0}, charged)
	assert.Equal(t, 3, e.ledgerRows(t, org, "debit"), "one debit per message posted")
	released2, err := releaseHold(e, org, hold)
	require.NoError(t, err)
	assert.EqualValues(t, 0, released2.GetReturned(), "4 held, 4 posted")
	assert.Equal(t, 0, e.ledgerRows(t, other, "debit"), "nothing taken from another organization's hold")
	e.assertLedgerSums(t, org)

	_, err = e.c.PostHolds(as(org), &billingv1.PostHoldsRequest{Posts: []*billingv1.PostHoldRequest{
		post(hold, uuid.New(), 1), {HoldId: "h", MessageId: uuid.NewString(), Credits: -1}}})
	assert.ElementsMatch(t, []string{"posts[1].holdId", "posts[1].credits"}, badFields(t, err))
	_, err = e.c.PostHolds(as(org), &billingv1.PostHoldsRequest{})
	assert.Equal(t, []string{"posts"}, badFields(t, err))
}

// Two campaigns of one organization dispatching at once send batches that post to both holds
// in either order; each batch takes the holds' locks in one order, so neither waits for the
// other for ever (PostgreSQL would abort one as a deadlock).
func TestPostHoldsInOppositeOrdersDoNotDeadlock(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "per_message", "")
	e.grant(t, org, 10_000, false)
	c1, c2 := uuid.New(), uuid.New()
	for _, h := range []uuid.UUID{c1, c2} {
		_, err := placeHold(e, org, h, 2_000)
		require.NoError(t, err)
	}
	batch := func(first, second uuid.UUID) *billingv1.PostHoldsRequest {
		req := &billingv1.PostHoldsRequest{}
		for range 20 {
			req.Posts = append(req.Posts,
				&billingv1.PostHoldRequest{HoldId: first.String(), MessageId: uuid.NewString(), Credits: 1},
				&billingv1.PostHoldRequest{HoldId: second.String(), MessageId: uuid.NewString(), Credits: 1})
		}
		return req
	}
	var g errgroup.Group
	for i := range 40 {
		first, second := c1, c2
		if i%2 == 1 {
			first, second = c2, c1
		}
		g.Go(func() error {
			res, err := e.c.PostHolds(as(org), batch(first, second))
			if err != nil {
				return err
			}
			for _, r := range res.GetResults() {
				if r.GetRefused() != "" || r.GetCharged() != 1 {
					return fmt.Errorf("post refused %q, charged %d", r.GetRefused(), r.GetCharged())
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	assert.Equal(t, 40*40, e.ledgerRows(t, org, "debit"))
	e.assertLedgerSums(t, org)
}

// Dispatch workers post batches to their campaign's hold at the same time, some messages more
// than once (a redelivered batch, or twice in one batch). All posts cost the same, so which
// messages the hold covers depends on the order but how many does not: held/cost of them are
// charged, once each, included credits first, and every post of a message answers alike.
func TestConcurrentPostHoldsChargeExactlyWhatTheHoldCovers(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "full_service", "")
	const included, available, held, cost, messages = 30, 100, 50, 3, 40
	e.grant(t, org, included, true)
	e.grant(t, org, available, false)
	hold := uuid.New()
	_, err := placeHold(e, org, hold, held)
	require.NoError(t, err)

	ids := make([]uuid.UUID, messages)
	var queue []uuid.UUID
	for i := range ids {
		ids[i] = uuid.New()
		queue = append(queue, ids[i], ids[i])
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
	const workers, batch = 8, 3
	var (
		mu      sync.Mutex
		answers = map[uuid.UUID][]*billingv1.PostHoldResult{}
		g       errgroup.Group
	)
	for w := range workers {
		var mine []uuid.UUID
		for i := w; i < len(queue); i += workers {
			mine = append(mine, queue[i])
		}
		g.Go(func() error {
			for len(mine) > 0 {
				req := &billingv1.PostHoldsRequest{}
				for _, m := range mine[:min(batch, len(mine))] {
					req.Posts = append(req.Posts, &billingv1.PostHoldRequest{HoldId: hold.String(), MessageId: m.String(), Credits: cost})
				}
				res, err := e.c.PostHolds(as(org), req)
				if err != nil {
					return err
				}
				mu.Lock()
				for i, r := range res.GetResults() {
					answers[mine[i]] = append(answers[mine[i]], r)
				}
				mu.Unlock()
				mine = mine[min(batch, len(mine)):]
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())

	covered := held / cost
	require.Len(t, answers, messages)
	charged := map[string]bool{}
	for m, rs := range answers {
		require.Len(t, rs, 2)
		for _, r := range rs {
			assert.Equal(t, rs[0].GetRefused(), r.GetRefused(), "every post of a message answers alike")
			if r.GetRefused() == "" {
				assert.EqualValues(t, cost, r.GetCharged())
			} else {
				assert.Equal(t, "HOLD_EXHAUSTED", r.GetRefused())
				assert.Zero(t, r.GetCharged())
			}
		}
		if rs[0].GetRefused() == "" {
			charged[m.String()] = true
		}
	}
	assert.Len(t, charged, covered, "the hold covers held/cost messages")

	rows, err := e.db.Query(context.Background(), `SELECT key, amount FROM ledger WHERE organization_id = $1 AND kind = 'debit'`, org)
	require.NoError(t, err)
	debits, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Key    string
		Amount int32
	}])
	require.NoError(t, err)
	debited := map[string]bool{}
	for _, d := range debits {
		assert.EqualValues(t, cost, d.Amount)
		debited[d.Key] = true
	}
	assert.Len(t, debits, covered, "one debit per message charged")
	assert.Equal(t, charged, debited, "the messages debited are those answered as charged")

	released, err := releaseHold(e, org, hold)
	require.NoError(t, err)
	spent := covered * cost
	fromIncluded := min(included, spent)
	assert.EqualValues(t, held-spent, released.GetReturned(), "nothing lost, nothing spent twice")
	assert.EqualValues(t, included-fromIncluded, released.GetCredits().GetIncluded(), "included credits were spent first")
	assert.EqualValues(t, available-(spent-fromIncluded), released.GetCredits().GetAvailable())
	e.assertLedgerSums(t, org)
}

// A batch waiting for a hold's lock behind a transaction that debits one of its messages
// answers that message as posted when the lock comes free, and posts the rest: the debit was
// made after the waiting statement began, so the statement alone does not see it.
func TestPostHoldsAfterWaitingForTheHoldAnswerWhatWasPostedMeanwhile(t *testing.T) {
	t.Parallel()
	e := start(t)
	org := e.account(t, "per_message", "")
	e.grant(t, org, 10, false)
	hold := uuid.New()
	_, err := placeHold(e, org, hold, 5)
	require.NoError(t, err)

	ctx := context.Background()
	tx, err := e.db.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT FROM holds WHERE organization_id = $1 AND id = $2 FOR UPDATE`, org, hold)
	require.NoError(t, err)

	first, second := uuid.New(), uuid.New()
	done := make(chan *billingv1.PostHoldsResponse, 1)
	var postErr error
	go func() {
		res, err := e.c.PostHolds(as(org), &billingv1.PostHoldsRequest{Posts: []*billingv1.PostHoldRequest{
			{HoldId: hold.String(), MessageId: first.String(), Credits: 1},
			{HoldId: hold.String(), MessageId: second.String(), Credits: 1},
		}})
		postErr = err
		done <- res
	}()
	require.Eventually(t, func() bool {
		var waiting int
		err := e.db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`).Scan(&waiting)
		return err == nil && waiting > 0
	}, 10*time.Second, 10*time.Millisecond, "the batch waits for the hold")
	// Post the first message as another caller would, then let the batch go on.
	_, err = tx.Exec(ctx, `UPDATE holds SET available_remaining = available_remaining - 1 WHERE organization_id = $1 AND id = $2`, org, hold)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `
		INSERT INTO ledger (organization_id, id, kind, key, hold_id, available_delta, included_delta, held_delta, amount)
		VALUES ($1, $2, 'debit', $3, $4, 0, 0, -1, 1)`, org, uuid.New(), first.String(), hold)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	res := <-done
	require.NoError(t, postErr)
	for _, r := range res.GetResults() {
		assert.Empty(t, r.GetRefused())
		assert.EqualValues(t, 1, r.GetCharged())
	}
	assert.Equal(t, 2, e.ledgerRows(t, org, "debit"), "the first message is debited once")
	released, err := releaseHold(e, org, hold)
	require.NoError(t, err)
	assert.EqualValues(t, 3, released.GetReturned())
	e.assertLedgerSums(t, org)
}
