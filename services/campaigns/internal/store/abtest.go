package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Variants of an A/B test.
const (
	VariantA = "A"
	VariantB = "B"
)

// Variant is the text of variant v (VariantA or VariantB), "" when unset.
func (c *Campaign) Variant(v string) string {
	t := c.VariantA
	if v == VariantB {
		t = c.VariantB
	}
	if t == nil {
		return ""
	}
	return *t
}

// AbTest is an A/B campaign's samples, their figures and, once decided, the winner.
type AbTest struct {
	ARecipients, BRecipients int32
	ASent, BSent             int32 // taken by the carrier (sent, delivered, undelivered)
	AReplies, BReplies       int32 // sample recipients who replied, opt-outs excluded
	DecideAt                 *time.Time
	Winner                   *string
	DecidedAt                *time.Time
}

// SampleSizes is how many of n sendable recipients get variant A and B: 5% each, rounded
// down, as the spec limits them (fewer than 20 recipients give empty samples).
func SampleSizes(n int32) (a, b int32) {
	k := max(0, n/20)
	return k, k
}

// ErrAudienceTooSmall is an A/B test whose sendable audience is too small for two
// non-empty samples: there is nothing to compare, so the campaign fails instead of sending.
var ErrAudienceTooSmall = errors.New("audience too small for two A/B samples")

// ReplyRate is replies / sent × 100, 0 before anything is sent.
func ReplyRate(replies, sent int32) float64 {
	if sent == 0 {
		return 0
	}
	return float64(replies) / float64(sent) * 100
}

// Leader is the variant with the higher reply rate; A on a tie (0/0 included).
func (t *AbTest) Leader() string {
	if ReplyRate(t.BReplies, t.BSent) > ReplyRate(t.AReplies, t.ASent) {
		return VariantB
	}
	return VariantA
}

const abColumns = `a_recipients, b_recipients, a_sent, b_sent, a_replies, b_replies, decide_at, winner, decided_at`

func scanAbTest(row pgx.Row) (AbTest, error) {
	var t AbTest
	err := row.Scan(&t.ARecipients, &t.BRecipients, &t.ASent, &t.BSent, &t.AReplies, &t.BReplies, &t.DecideAt, &t.Winner, &t.DecidedAt)
	return t, err
}

// GetAbTest returns org's A/B test of campaign; found is false before its samples are drawn.
func (s *Store) GetAbTest(ctx context.Context, org, campaign uuid.UUID) (t AbTest, found bool, err error) {
	t, err = scanAbTest(s.pool.QueryRow(ctx, `SELECT `+abColumns+` FROM ab_tests WHERE organization_id = $1 AND campaign_id = $2`, org, campaign))
	if errors.Is(err, pgx.ErrNoRows) {
		return AbTest{}, false, nil
	}
	if err != nil {
		return AbTest{}, false, fmt.Errorf("read A/B test: %w", err)
	}
	return t, true, nil
}

// DrawSamples picks, once, the recipients of variants A and B at random among the
// campaign's sendable recipients (SampleSizes of them each) and gives variant B's its
// text and price. The draw is stored in the transaction that creates the test's row, so
// a repeated call (a retried job, a second replica) returns the draw already made. An
// audience whose samples would be empty is ErrAudienceTooSmall, and nothing is stored.
func (s *Store) DrawSamples(ctx context.Context, org, campaign uuid.UUID) (AbTest, error) {
	var t AbTest
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var n int32
		if err := tx.QueryRow(ctx, `SELECT count(*)::int FROM recipients WHERE campaign_id = $1 AND status = 'queued'`, campaign).Scan(&n); err != nil {
			return fmt.Errorf("count sendable recipients: %w", err)
		}
		a, b := SampleSizes(n)
		if a == 0 {
			// A repeated call finds the draw already made, whatever the audience is now.
			var drawn bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM ab_tests WHERE campaign_id = $1)`, campaign).Scan(&drawn); err != nil {
				return fmt.Errorf("read A/B test: %w", err)
			}
			if !drawn {
				return fmt.Errorf("%d sendable recipients: %w", n, ErrAudienceTooSmall)
			}
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO ab_tests (campaign_id, organization_id, a_recipients, b_recipients) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, campaign, org, a, b)
		if err != nil {
			return fmt.Errorf("store A/B test: %w", err)
		}
		if tag.RowsAffected() == 1 {
			_, err = tx.Exec(ctx, `
				WITH drawn AS (
					SELECT contact_id, row_number() OVER () AS n FROM (
						SELECT contact_id FROM recipients WHERE campaign_id = $1 AND status = 'queued'
						ORDER BY random() LIMIT $2::int + $3::int) s)
				UPDATE recipients r SET variant = CASE WHEN d.n <= $2 THEN 'A' ELSE 'B' END,
					body = CASE WHEN d.n <= $2 THEN r.body ELSE r.body_b END,
					credits = CASE WHEN d.n <= $2 THEN r.credits ELSE r.credits_b END
				FROM drawn d WHERE r.campaign_id = $1 AND r.contact_id = d.contact_id`, campaign, a, b)
			if err != nil {
				return fmt.Errorf("draw A/B samples: %w", err)
			}
		}
		t, err = scanAbTest(tx.QueryRow(ctx, `SELECT `+abColumns+` FROM ab_tests WHERE campaign_id = $1`, campaign))
		if err != nil {
			return fmt.Errorf("read A/B test: %w", err)
		}
		return nil
	})
	return t, err
}

// AbEstimate is the credits an A/B campaign may cost, its winner unknown: each sample
// recipient at its variant's price, and the rest at the price of the variant dearer for
// the rest as a whole.
func (s *Store) AbEstimate(ctx context.Context, campaign uuid.UUID) (int32, error) {
	var n int32
	err := s.pool.QueryRow(ctx, `
		SELECT (coalesce(sum(credits) FILTER (WHERE variant IS NOT NULL), 0)
			+ greatest(coalesce(sum(credits) FILTER (WHERE variant IS NULL), 0), coalesce(sum(credits_b) FILTER (WHERE variant IS NULL), 0)))::int
		FROM recipients WHERE campaign_id = $1 AND status = 'queued'`, campaign).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("A/B estimate: %w", err)
	}
	return n, nil
}

// SetDecideAt fixes when the test is decided, the first time it is called (the samples
// have been handed to messaging), and returns the time fixed.
func (s *Store) SetDecideAt(ctx context.Context, org, campaign uuid.UUID, at time.Time) (time.Time, error) {
	var fixed time.Time
	err := s.pool.QueryRow(ctx, `
		UPDATE ab_tests SET decide_at = coalesce(decide_at, $3) WHERE organization_id = $1 AND campaign_id = $2
		RETURNING decide_at`, org, campaign, at).Scan(&fixed)
	if err != nil {
		return time.Time{}, fmt.Errorf("set A/B decision time: %w", err)
	}
	return fixed, nil
}

// Decide writes the winner once, when decide_at has passed at now (or at once when there
// are no samples), and gives the rest of the recipients the winner's text and price in the
// same transaction. It returns the winner, "" while it is too early. The test's row is
// locked meanwhile, so concurrent calls decide once and agree.
func (s *Store) Decide(ctx context.Context, org, campaign uuid.UUID, now time.Time) (string, error) {
	winner := ""
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		t, err := scanAbTest(tx.QueryRow(ctx, `SELECT `+abColumns+` FROM ab_tests WHERE organization_id = $1 AND campaign_id = $2 FOR UPDATE`, org, campaign))
		if err != nil {
			return fmt.Errorf("lock A/B test: %w", err)
		}
		switch {
		case t.Winner != nil:
			winner = *t.Winner
			return nil
		case t.ARecipients+t.BRecipients > 0 && (t.DecideAt == nil || now.Before(*t.DecideAt)):
			return nil
		}
		winner = t.Leader()
		if _, err := tx.Exec(ctx, `UPDATE ab_tests SET winner = $2, decided_at = $3 WHERE campaign_id = $1`, campaign, winner, now); err != nil {
			return fmt.Errorf("store A/B winner: %w", err)
		}
		if winner == VariantB {
			_, err := tx.Exec(ctx, `
				UPDATE recipients SET body = body_b, credits = credits_b
				WHERE campaign_id = $1 AND variant IS NULL AND body_b IS NOT NULL`, campaign)
			if err != nil {
				return fmt.Errorf("price the rest at the winner: %w", err)
			}
		}
		return nil
	})
	return winner, err
}

// countVariantSent moves the samples' sent counters with their recipients' statuses, by a and
// b (variant A's and B's), inside tx.
func countVariantSent(ctx context.Context, tx pgx.Tx, campaign uuid.UUID, a, b int) error {
	_, err := tx.Exec(ctx, `UPDATE ab_tests SET a_sent = a_sent + $2, b_sent = b_sent + $3 WHERE campaign_id = $1`, campaign, a, b)
	if err != nil {
		return fmt.Errorf("A/B sent counter: %w", err)
	}
	return nil
}

// CountVariantReply counts a reply (not an opt-out) from who to campaign for its sample, once
// per recipient, inside tx; a reply from the rest, or from no recipient, counts nowhere.
func (s *Store) CountVariantReply(ctx context.Context, tx pgx.Tx, org, campaign uuid.UUID, who Who) error {
	match, arg := who.match(3)
	_, err := tx.Exec(ctx, `
		WITH s AS (
			UPDATE recipients r SET replied = true
			WHERE r.campaign_id = $2 AND r.organization_id = $1 AND `+match+` AND r.variant IS NOT NULL AND NOT r.replied
			RETURNING r.variant)
		UPDATE ab_tests t SET a_replies = a_replies + (s.variant = 'A')::int, b_replies = b_replies + (s.variant = 'B')::int
		FROM s WHERE t.campaign_id = $2`, org, campaign, arg)
	if err != nil {
		return fmt.Errorf("count A/B reply: %w", err)
	}
	return nil
}
