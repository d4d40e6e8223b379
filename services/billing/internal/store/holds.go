package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Hold is a reservation of credits and what is left of it.
type Hold struct {
	ID        uuid.UUID
	Credits   int32 // asked for
	Metered   bool  // false on an unlimited plan: nothing reserved, posts cost nothing
	Remaining int32
	Released  bool
}

// Held is what the hold reserved when placed.
func (h Hold) Held() int32 {
	if !h.Metered {
		return 0
	}
	return h.Credits
}

func (s *Store) hold(ctx context.Context, org, id uuid.UUID) (Hold, error) {
	h := Hold{ID: id}
	err := s.pool.QueryRow(ctx, `
		SELECT credits, metered, included_remaining + available_remaining, released_at IS NOT NULL
		FROM holds WHERE organization_id = $1 AND id = $2`, org, id).Scan(&h.Credits, &h.Metered, &h.Remaining, &h.Released)
	if errors.Is(err, pgx.ErrNoRows) {
		return Hold{}, ErrNotFound
	}
	if err != nil {
		return Hold{}, fmt.Errorf("select hold: %w", err)
	}
	return h, nil
}

// PlaceHold reserves credits (> 0) under id once: a retry answers the hold as it is now. On an
// unlimited plan the hold reserves nothing. It fails with ErrSuspended or ErrInsufficient,
// changing nothing, and ErrKeyReused when id was placed for another amount.
func (s *Store) PlaceHold(ctx context.Context, org, id uuid.UUID, credits int32) (Hold, Balance, error) {
	entryID, err := newID()
	if err != nil {
		return Hold{}, Balance{}, err
	}
	var b Balance
	var fromIncluded int32
	err = s.debitLocked(ctx, org, `
		WITH `+debitCTEs(`NOT EXISTS (SELECT 1 FROM holds WHERE organization_id = $1 AND id = $2)`)+`,
		placed AS (
			INSERT INTO holds (organization_id, id, credits, metered, included_remaining, available_remaining, included_period)
			SELECT $1, $2, $3::integer, true, from_included, $3::integer - from_included, period_number FROM debit
		), entry AS (
			INSERT INTO ledger (organization_id, id, kind, key, hold_id, available_delta, included_delta, held_delta, amount)
			SELECT $1, $4, 'hold', $2::text, $2, -($3::integer - from_included), -from_included, $3::integer, $3::integer FROM debit
		)
		SELECT available, included, from_included FROM debit`,
		[]any{org, id, credits, entryID}, &b.Available, &b.Included, &fromIncluded)
	if err == nil {
		return Hold{ID: id, Credits: credits, Metered: true, Remaining: credits}, b, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) && !isUnique(err) {
		return Hold{}, Balance{}, fmt.Errorf("place hold: %w", err)
	}
	// Nothing reserved: say why, or place an unlimited plan's empty hold.
	h, err := s.hold(ctx, org, id)
	if err == nil {
		if h.Credits != credits {
			return Hold{}, Balance{}, ErrKeyReused
		}
		b, err := s.balance(ctx, org)
		return h, b, err
	}
	if !errors.Is(err, ErrNotFound) {
		return Hold{}, Balance{}, err
	}
	a, err := s.Account(ctx, org)
	if err != nil {
		return Hold{}, Balance{}, err
	}
	switch {
	case a.BillingStatus == StatusSuspended || a.BillingStatus == StatusArchived:
		return Hold{}, Balance{}, ErrSuspended
	case a.PricingModel != PricingUnlimited:
		return Hold{}, Balance{}, ErrInsufficient
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO holds (organization_id, id, credits, metered, included_remaining, available_remaining)
		VALUES ($1, $2, $3, false, 0, 0) ON CONFLICT DO NOTHING`, org, id, credits)
	if err != nil {
		return Hold{}, Balance{}, fmt.Errorf("insert unmetered hold: %w", err)
	}
	if h, err = s.hold(ctx, org, id); err != nil {
		return Hold{}, Balance{}, err
	}
	if h.Credits != credits {
		return Hold{}, Balance{}, ErrKeyReused
	}
	return h, a.Balance, nil
}

// postHoldSQL debits $4 credits for message key $3 from hold $2 of organization $1 under ledger
// entry $5, once per message; it answers the hold's size and what it has left, or no row when
// nothing was posted (posted before, released, exhausted, suspended, unmetered, unknown).
const postHoldSQL = `
	WITH cur AS (
		SELECT h.organization_id, h.id, LEAST(h.included_remaining, $4::integer) AS from_included
		FROM holds h JOIN accounts a ON a.organization_id = h.organization_id
		WHERE h.organization_id = $1 AND h.id = $2 AND h.metered AND h.released_at IS NULL
			AND a.billing_status NOT IN ('suspended', 'archived')
			AND NOT EXISTS (SELECT 1 FROM ledger WHERE organization_id = $1 AND kind = 'debit' AND key = $3)
		FOR UPDATE OF h
	), post AS (
		UPDATE holds h
		SET included_remaining = h.included_remaining - cur.from_included,
			available_remaining = h.available_remaining - ($4::integer - cur.from_included)
		FROM cur
		WHERE h.organization_id = cur.organization_id AND h.id = cur.id
			AND h.available_remaining >= $4::integer - cur.from_included
		RETURNING h.credits, h.included_remaining + h.available_remaining AS remaining
	), entry AS (
		INSERT INTO ledger (organization_id, id, kind, key, hold_id, available_delta, included_delta, held_delta, amount)
		SELECT $1, $5, 'debit', $3, $2, 0, 0, -$4::integer, $4::integer FROM post
	)
	SELECT credits, remaining FROM post`

// PostHold debits credits (>= 0) for message from the hold once: a retry answers the first
// post. It fails with ErrNotFound, ErrHoldReleased, ErrSuspended or ErrHoldExhausted (more
// than the hold has left), changing nothing. Posts to an unmetered hold cost nothing.
func (s *Store) PostHold(ctx context.Context, org, id, message uuid.UUID, credits int32) (int32, Hold, error) {
	entryID, err := newID()
	if err != nil {
		return 0, Hold{}, err
	}
	if credits > 0 {
		h := Hold{ID: id, Metered: true}
		err = s.pool.QueryRow(ctx, postHoldSQL, org, id, message.String(), credits, entryID).Scan(&h.Credits, &h.Remaining)
		if err == nil {
			return credits, h, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) && !isUnique(err) {
			return 0, Hold{}, fmt.Errorf("post to hold: %w", err)
		}
	}
	return s.explainPost(ctx, org, id, message, credits)
}

// Post is one message's debit against a hold.
type Post struct {
	Hold, Message uuid.UUID
	Credits       int32
}

// PostResult is what became of one Post: what it charged, or the error PostHold would return.
type PostResult struct {
	Charged int32
	Err     error
}

// postHoldsSQL posts a batch in one statement, so a hold's row lock is held while it runs
// rather than across round trips to the client, with every dispatch worker of the campaign
// queued behind it. The posts of organization $1 come as columns in hold order: hold $2,
// message $3, credits (> 0) $4, ledger entry $5, and $6 whether the message is named more than
// once. The postable holds are locked in hold order (two batches posting to two holds in
// opposite orders would otherwise deadlock), then the posts are walked in order as one post at
// a time would be: a post is charged, included credits first, when its hold is postable and
// has what it costs and its message was neither debited before nor charged earlier in the
// batch (after a post the hold cannot pay for, a smaller one may pass). Prior debits are
// probed message by message: the LIMIT keeps each a probe of the unique index whatever the
// statistics, where `key = ANY(...)` got a generic plan reading every debit of the
// organization. Each hold is updated once. It answers the ordinals (from 1) of the posts charged.
const postHoldsSQL = `
	WITH RECURSIVE locked AS MATERIALIZED (
		SELECT h.id, h.included_remaining AS included, h.available_remaining AS available
		FROM holds h JOIN accounts a ON a.organization_id = h.organization_id
		WHERE h.organization_id = $1 AND h.id = ANY($2::uuid[]) AND h.metered AND h.released_at IS NULL
			AND a.billing_status NOT IN ('suspended', 'archived')
		ORDER BY h.id
		FOR UPDATE OF h
	), walk (n, hold_id, message, credits, included, available, charged_messages, charged, from_included) AS (
		SELECT 0, NULL::uuid, NULL::uuid, 0, 0, 0, '{}'::uuid[], false, 0
		UNION ALL
		SELECT w.n + 1, p.hold_id, p.message, p.credits,
			b.included - t.from_included, b.available - CASE WHEN t.charged THEN p.credits - t.from_included ELSE 0 END,
			CASE WHEN t.charged AND p.repeated THEN w.charged_messages || p.message ELSE w.charged_messages END,
			t.charged, t.from_included
		FROM walk w
		CROSS JOIN LATERAL (SELECT ($2::uuid[])[w.n + 1] AS hold_id, ($3::uuid[])[w.n + 1] AS message,
			($4::integer[])[w.n + 1] AS credits, ($6::boolean[])[w.n + 1] AS repeated) p
		LEFT JOIN locked l ON l.id = p.hold_id
		CROSS JOIN LATERAL (SELECT
			CASE WHEN p.hold_id = w.hold_id THEN w.included ELSE l.included END AS included,
			CASE WHEN p.hold_id = w.hold_id THEN w.available ELSE l.available END AS available) b
		LEFT JOIN LATERAL (SELECT true AS found FROM ledger d
			WHERE d.organization_id = $1 AND d.kind = 'debit' AND d.key = p.message::text LIMIT 1) prior ON true
		CROSS JOIN LATERAL (SELECT c.charged, CASE WHEN c.charged THEN LEAST(b.included, p.credits) ELSE 0 END AS from_included
			FROM (SELECT coalesce(b.included + b.available >= p.credits, false) AND prior.found IS NULL
				AND NOT (p.repeated AND p.message = ANY(w.charged_messages)) AS charged) c) t
		WHERE w.n < cardinality($2::uuid[])
	), spend AS (
		UPDATE holds h
		SET included_remaining = h.included_remaining - s.included,
			available_remaining = h.available_remaining - s.available
		FROM (SELECT hold_id, sum(from_included) AS included, sum(credits - from_included) AS available
			FROM walk WHERE charged GROUP BY hold_id) s
		WHERE h.organization_id = $1 AND h.id = s.hold_id
	), debits AS (
		INSERT INTO ledger (organization_id, id, kind, key, hold_id, available_delta, included_delta, held_delta, amount)
		SELECT $1, ($5::uuid[])[n], 'debit', message::text, hold_id, 0, 0, -credits, credits FROM walk WHERE charged
	)
	SELECT n FROM walk WHERE charged`

// PostHolds applies posts as PostHold does, each once per message, in one statement whatever
// the batch's size (postHoldsSQL). Posts that post nothing are then explained one by one, as
// PostHold explains them. An error of the database fails the whole call, changing nothing; a
// retry then answers each post as it was made.
func (s *Store) PostHolds(ctx context.Context, org uuid.UUID, posts []Post) ([]PostResult, error) {
	results := make([]PostResult, len(posts))
	posted := make([]bool, len(posts))
	var queued []int
	for i, p := range posts {
		if p.Credits > 0 {
			queued = append(queued, i)
		}
	}
	slices.SortStableFunc(queued, func(a, b int) int { return bytes.Compare(posts[a].Hold[:], posts[b].Hold[:]) })
	if len(queued) > 0 {
		charged, err := s.postQueued(ctx, org, posts, queued)
		if err != nil {
			return nil, fmt.Errorf("post to holds: %w", err)
		}
		for _, n := range charged {
			i := queued[n-1]
			posted[i], results[i].Charged = true, posts[i].Credits
		}
	}
	for i, p := range posts {
		if !posted[i] {
			results[i].Charged, _, results[i].Err = s.explainPost(ctx, org, p.Hold, p.Message, p.Credits)
		}
	}
	return results, nil
}

// postQueued runs postHoldsSQL on posts[queued] and returns the ordinals (from 1, in queued)
// of the posts charged. The statement's snapshot is taken before it waits for a hold's lock,
// so it does not see debits that the transaction it waited for committed: charging one of
// those messages again violates the ledger's unique key, which rolls the whole statement back.
// It is then run again, and the new snapshot sees the debit. Each such violation is a message
// of the batch debited by another caller, so the batch's distinct messages bound the retries.
func (s *Store) postQueued(ctx context.Context, org uuid.UUID, posts []Post, queued []int) ([]int32, error) {
	n := len(queued)
	holds, messages, entries := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n)
	credits, repeated := make([]int32, n), make([]bool, n)
	named := make(map[uuid.UUID]int, n)
	for j, i := range queued {
		holds[j], messages[j], credits[j] = posts[i].Hold, posts[i].Message, posts[i].Credits
		named[posts[i].Message]++
		id, err := newID()
		if err != nil {
			return nil, err
		}
		entries[j] = id
	}
	for j, m := range messages {
		repeated[j] = named[m] > 1
	}
	for retries := 0; ; retries++ {
		rows, err := s.pool.Query(ctx, postHoldsSQL, org, holds, messages, credits, entries, repeated)
		if err == nil {
			var charged []int32
			charged, err = pgx.CollectRows(rows, pgx.RowTo[int32])
			if err == nil {
				return charged, nil
			}
		}
		if !isUnique(err) || retries == len(named) {
			return nil, err
		}
	}
}

// explainPost answers a post that posted nothing: a retry answers the first post, a free
// message or an unmetered hold costs nothing, and anything else is why not.
func (s *Store) explainPost(ctx context.Context, org, id, message uuid.UUID, credits int32) (int32, Hold, error) {
	d, found, err := s.priorDebit(ctx, org, message, credits)
	if err != nil {
		return 0, Hold{}, err
	}
	h, err := s.hold(ctx, org, id)
	if err != nil {
		return 0, Hold{}, err
	}
	switch {
	case found:
		return d.Charged, h, nil
	case h.Released:
		return 0, Hold{}, ErrHoldReleased
	case credits == 0 || !h.Metered:
		return 0, h, nil
	}
	a, err := s.Account(ctx, org)
	if err != nil {
		return 0, Hold{}, err
	}
	if a.BillingStatus == StatusSuspended || a.BillingStatus == StatusArchived {
		return 0, Hold{}, ErrSuspended
	}
	return 0, Hold{}, ErrHoldExhausted
}

// ReleaseHold returns what the hold has left to the balances it came from, except included
// credits taken in a period that has since renewed: those expire (the period they belonged to
// is over, and returning them would give the new period more than its allowance). Releasing
// again changes nothing and answers the first release. ErrNotFound when there is no such hold.
func (s *Store) ReleaseHold(ctx context.Context, org, id uuid.UUID) (int32, Hold, Balance, error) {
	entryID, err := newID()
	if err != nil {
		return 0, Hold{}, Balance{}, err
	}
	expiryID, err := newID()
	if err != nil {
		return 0, Hold{}, Balance{}, err
	}
	var (
		returned int32
		b        Balance
	)
	err = s.pool.QueryRow(ctx, `
		WITH cur AS (
			SELECT organization_id, id, included_remaining, available_remaining, included_period FROM holds
			WHERE organization_id = $1 AND id = $2 AND released_at IS NULL
			FOR UPDATE
		), released AS (
			UPDATE holds h SET included_remaining = 0, available_remaining = 0, released_at = now()
			FROM cur WHERE h.organization_id = cur.organization_id AND h.id = cur.id
			RETURNING cur.included_remaining AS inc, cur.available_remaining AS avail, cur.included_period AS period
		), credited AS (
			UPDATE accounts a
			SET included = a.included + CASE WHEN a.period_number = released.period THEN released.inc ELSE 0 END,
				available = a.available + released.avail, updated_at = now()
			FROM released WHERE a.organization_id = $1
			RETURNING a.available, a.included,
				CASE WHEN a.period_number = released.period THEN released.inc ELSE 0 END AS inc
		), entry AS (
			INSERT INTO ledger (organization_id, id, kind, key, hold_id, available_delta, included_delta, held_delta, amount)
			SELECT $1, $3, 'release', $2::text, $2, released.avail, credited.inc,
				-(released.avail + credited.inc), released.avail + credited.inc
			FROM released, credited
		), expired AS (
			INSERT INTO ledger (organization_id, id, kind, key, hold_id, available_delta, included_delta, held_delta, amount)
			SELECT $1, $4, 'expiry', $2::text, $2, 0, 0, -(released.inc - credited.inc), released.inc - credited.inc
			FROM released, credited WHERE released.inc > credited.inc
		)
		SELECT released.avail + credited.inc, credited.available, credited.included FROM released, credited`,
		org, id, entryID, expiryID).Scan(&returned, &b.Available, &b.Included)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, Hold{}, Balance{}, fmt.Errorf("release hold: %w", err)
	}
	h, herr := s.hold(ctx, org, id)
	if herr != nil {
		return 0, Hold{}, Balance{}, herr
	}
	if err == nil {
		return returned, h, b, nil
	}
	// Released before: answer that release.
	err = s.pool.QueryRow(ctx, `
		SELECT amount FROM ledger WHERE organization_id = $1 AND kind = 'release' AND key = $2`,
		org, id.String()).Scan(&returned)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, Hold{}, Balance{}, fmt.Errorf("select release: %w", err)
	}
	b, err = s.balance(ctx, org)
	return returned, h, b, err
}
