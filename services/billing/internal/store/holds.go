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

// PostHolds applies posts as PostHold does, each once per message, in one transaction of four
// statements whatever the batch's size: the holds' rows are locked (in hold order, whatever
// order the posts came in: two batches posting to the same two holds, two campaigns of one
// organization, would otherwise each hold one lock and wait for the other's), the messages
// already debited read, each hold updated once with its posts' total and the debits inserted
// together. Posts are decided in order per hold, as one statement each would (a post the hold
// cannot pay for fails and a later, smaller one may pass); one statement per post updated the
// hold's row once per post, each update walking the row versions the transaction's previous
// ones left (a millisecond a post at 500). Posts that post nothing are then explained one by
// one, as PostHold explains them. An error of the database (a post of the same message made at
// the same moment by another caller included) fails the whole call, changing nothing; a retry
// then answers each post as it was made.
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
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if len(queued) == 0 {
			return nil
		}
		balances, err := lockPostableHolds(ctx, tx, org, posts, queued)
		if err != nil {
			return err
		}
		keys := make([]string, len(queued))
		for j, i := range queued {
			keys[j] = posts[i].Message.String()
		}
		debited, err := debitedKeys(ctx, tx, org, keys)
		if err != nil {
			return err
		}
		var d postDeltas
		for j, i := range queued {
			p, b := posts[i], balances[posts[i].Hold]
			if b == nil || debited[keys[j]] {
				continue // explained below
			}
			fromIncluded := min(b.included, p.Credits)
			if b.available < p.Credits-fromIncluded {
				continue // the hold cannot pay for it: explained below
			}
			b.included, b.spentIncluded = b.included-fromIncluded, b.spentIncluded+fromIncluded
			b.available, b.spentAvailable = b.available-(p.Credits-fromIncluded), b.spentAvailable+(p.Credits-fromIncluded)
			entryID, err := newID()
			if err != nil {
				return err
			}
			d.add(p, keys[j], entryID)
			debited[keys[j]] = true // the same message twice in the batch posts once
			posted[i], results[i].Charged = true, p.Credits
		}
		return d.apply(ctx, tx, org, balances)
	})
	if err != nil {
		return nil, fmt.Errorf("post to holds: %w", err)
	}
	for i, p := range posts {
		if !posted[i] {
			results[i].Charged, _, results[i].Err = s.explainPost(ctx, org, p.Hold, p.Message, p.Credits)
		}
	}
	return results, nil
}

// holdBalance is a locked hold's remaining credits as a batch of posts spends them, and what
// the batch spent of each.
type holdBalance struct {
	included, available           int32
	spentIncluded, spentAvailable int32
}

// lockPostableHolds locks, in hold order, the holds of posts[queued] that can be posted to
// (metered, not released, the account neither suspended nor archived) and returns their
// balances; a hold that cannot is absent.
func lockPostableHolds(ctx context.Context, tx pgx.Tx, org uuid.UUID, posts []Post, queued []int) (map[uuid.UUID]*holdBalance, error) {
	var ids []uuid.UUID
	for _, i := range queued {
		if len(ids) == 0 || ids[len(ids)-1] != posts[i].Hold {
			ids = append(ids, posts[i].Hold)
		}
	}
	rows, err := tx.Query(ctx, `
		SELECT h.id, h.included_remaining, h.available_remaining
		FROM holds h JOIN accounts a ON a.organization_id = h.organization_id
		WHERE h.organization_id = $1 AND h.id = ANY($2) AND h.metered AND h.released_at IS NULL
			AND a.billing_status NOT IN ('suspended', 'archived')
		ORDER BY h.id
		FOR UPDATE OF h`, org, ids)
	if err != nil {
		return nil, fmt.Errorf("lock holds: %w", err)
	}
	out := map[uuid.UUID]*holdBalance{}
	var (
		id uuid.UUID
		b  holdBalance
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &b.included, &b.available}, func() error {
		out[id] = &holdBalance{included: b.included, available: b.available}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock holds: %w", err)
	}
	return out, nil
}

// debitedKeys are those of keys (message ids) the organization was already debited for. Each
// key is looked up in the unique index on its own (the LIMIT keeps the subquery a per-key
// probe): as `key = ANY($2)`, the generic plan read every debit of the organization and
// compared each with every key, 181 ms for 500 keys against 20,000 debits, growing with both.
func debitedKeys(ctx context.Context, tx pgx.Tx, org uuid.UUID, keys []string) (map[string]bool, error) {
	rows, err := tx.Query(ctx, `SELECT k.key FROM unnest($2::text[]) AS k(key)
		CROSS JOIN LATERAL (SELECT FROM ledger l WHERE l.organization_id = $1 AND l.kind = 'debit' AND l.key = k.key LIMIT 1) AS debit`, org, keys)
	if err != nil {
		return nil, fmt.Errorf("read prior debits: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read prior debits: %w", err)
	}
	out := make(map[string]bool, len(keys))
	for _, k := range found {
		out[k] = true
	}
	return out, nil
}

// postDeltas are a batch's debits, as columns.
type postDeltas struct {
	entries []uuid.UUID
	keys    []string
	holds   []uuid.UUID
	credits []int32
}

func (d *postDeltas) add(p Post, key string, entry uuid.UUID) {
	d.entries, d.keys = append(d.entries, entry), append(d.keys, key)
	d.holds, d.credits = append(d.holds, p.Hold), append(d.credits, p.Credits)
}

// apply updates each hold once with what the batch spent of it and inserts the debits.
func (d *postDeltas) apply(ctx context.Context, tx pgx.Tx, org uuid.UUID, balances map[uuid.UUID]*holdBalance) error {
	if len(d.entries) == 0 {
		return nil
	}
	var ids []uuid.UUID
	var included, available []int32
	for id, b := range balances {
		if b.spentIncluded > 0 || b.spentAvailable > 0 {
			ids, included, available = append(ids, id), append(included, b.spentIncluded), append(available, b.spentAvailable)
		}
	}
	if _, err := tx.Exec(ctx, `
		UPDATE holds h SET included_remaining = h.included_remaining - s.included,
			available_remaining = h.available_remaining - s.available
		FROM unnest($2::uuid[], $3::integer[], $4::integer[]) AS s(id, included, available)
		WHERE h.organization_id = $1 AND h.id = s.id`, org, ids, included, available); err != nil {
		return fmt.Errorf("spend holds: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO ledger (organization_id, id, kind, key, hold_id, available_delta, included_delta, held_delta, amount)
		SELECT $1, e.id, 'debit', e.key, e.hold_id, 0, 0, -e.credits, e.credits
		FROM unnest($2::uuid[], $3::text[], $4::uuid[], $5::integer[]) AS e(id, key, hold_id, credits)`,
		org, d.entries, d.keys, d.holds, d.credits); err != nil {
		return fmt.Errorf("insert debits: %w", err)
	}
	return nil
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
