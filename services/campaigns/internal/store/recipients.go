package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Recipient is one (campaign, contact) of a send.
type Recipient struct {
	ContactID uuid.UUID
	Phone     string
	Body      string
	Credits   int32
	// Unsendable is why a recipient is failed when the audience is stored ("" when it is
	// not): UnsentEmptyText, UnsentTooLong. Never queued, counted in the campaign's
	// failedCount and, by reason, in its Unsent.
	Unsendable string
	// Timezone is the recipient's own zone ("" unknown), see quiethours.RecipientZone.
	Timezone string
	// State is the contact's US state (USPS code, "" none given), see quiethours.StateCode.
	State string
	// BodyB and CreditsB are the text and price of variant B in an A/B campaign (Body and
	// Credits then being variant A's); nil otherwise.
	BodyB    *string
	CreditsB *int32
}

// Why a recipient gets no message (Recipient.Unsendable): its text merged to nothing, or to
// more than one message carries (smsrules.MaxTextLength).
const (
	UnsentEmptyText = "EMPTY_TEXT"
	UnsentTooLong   = "TEXT_TOO_LONG"
)

// Status reads a campaign's status and submission, the cheap check between fan-out batches.
func (s *Store) Status(ctx context.Context, org, id uuid.UUID) (status string, submission int32, err error) {
	err = s.pool.QueryRow(ctx, `SELECT status, submission FROM campaigns WHERE organization_id = $1 AND id = $2`, org, id).Scan(&status, &submission)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, ErrNotFound
	}
	if err != nil {
		return "", 0, fmt.Errorf("campaign status: %w", err)
	}
	return status, submission, nil
}

// AudienceCursor is the contact id up to which a campaign's audience is stored (uuid.Nil for
// none): the audience stream resumes after it.
func (s *Store) AudienceCursor(ctx context.Context, campaign uuid.UUID) (uuid.UUID, error) {
	var through uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT coalesce(audience_through, '00000000-0000-0000-0000-000000000000') FROM campaigns WHERE id = $1`, campaign).Scan(&through)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, nil // deleted
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("audience cursor: %w", err)
	}
	return through, nil
}

// MoveAudienceCursor records that every recipient up to contact id through is stored, and
// with queued also handed to messaging (the queue cursor moves with it); neither cursor ever
// moves back.
func (s *Store) MoveAudienceCursor(ctx context.Context, campaign, through uuid.UUID, queued bool) error {
	_, err := s.pool.Exec(ctx, `UPDATE campaigns SET audience_through = greatest(audience_through, $2),
		queued_through = CASE WHEN $3 THEN greatest(queued_through, $2) ELSE queued_through END WHERE id = $1`, campaign, through, queued)
	if err != nil {
		return fmt.Errorf("move audience cursor: %w", err)
	}
	return nil
}

// AddRecipients stores a batch of a campaign's recipients; one already stored (a retried
// batch, a second job) is kept as it is. The batch is copied in (COPY: half the cost of an
// INSERT ... ON CONFLICT); a batch that meets a recipient already stored, which only a retry
// or a resumed send hands over, is inserted again skipping those.
func (s *Store) AddRecipients(ctx context.Context, org, campaign uuid.UUID, rs []Recipient) error {
	rows := make([][]any, len(rs))
	for i, r := range rs {
		credits, status, creditsB := r.stored()
		rows[i] = []any{campaign, org, r.ContactID, r.Phone, r.Body, credits, status, r.Timezone, r.BodyB, creditsB, r.reason(), r.State}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"recipients"}, recipientColumns, pgx.CopyFromRows(rows))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		err = s.addRecipientsAgain(ctx, org, campaign, rs)
	}
	if err != nil {
		return fmt.Errorf("add recipients: %w", err)
	}
	return nil
}

// recipientColumns are the columns AddRecipients writes, in the order of its rows.
var recipientColumns = []string{"campaign_id", "organization_id", "contact_id", "phone", "body", "credits", "status", "timezone", "body_b", "credits_b", "unsent_reason", "state"}

// reason is the recipient's unsent_reason: NULL for one that is sent.
func (r Recipient) reason() *string {
	if r.Unsendable == "" {
		return nil
	}
	return &r.Unsendable
}

// stored is what a recipient's row records of its price and status: an unsendable one is
// failed at once and costs nothing.
func (r Recipient) stored() (credits int32, status string, creditsB *int32) {
	if r.Unsendable == "" {
		return r.Credits, "queued", r.CreditsB
	}
	if r.CreditsB != nil {
		creditsB = new(int32)
	}
	return 0, "failed", creditsB
}

// addRecipientsAgain inserts AddRecipients' batch, skipping the recipients already stored.
func (s *Store) addRecipientsAgain(ctx context.Context, org, campaign uuid.UUID, rs []Recipient) error {
	ids, phones, bodies, credits := make([]uuid.UUID, len(rs)), make([]string, len(rs)), make([]string, len(rs)), make([]int32, len(rs))
	statuses, zones, states := make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs))
	bodiesB, creditsB, reasons := make([]*string, len(rs)), make([]*int32, len(rs)), make([]*string, len(rs))
	for i, r := range rs {
		ids[i], phones[i], bodies[i], zones[i], bodiesB[i], reasons[i] = r.ContactID, r.Phone, r.Body, r.Timezone, r.BodyB, r.reason()
		credits[i], statuses[i], creditsB[i] = r.stored()
		states[i] = r.State
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO recipients (campaign_id, organization_id, contact_id, phone, body, credits, status, timezone, body_b, credits_b, unsent_reason, state)
		SELECT $1, $2, * FROM unnest($3::uuid[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::int[], $11::text[], $12::text[])
		ON CONFLICT DO NOTHING`, campaign, org, ids, phones, bodies, credits, statuses, zones, bodiesB, creditsB, reasons, states)
	return err
}

// ResolveAudience records that a campaign's audience is stored: its total, the recipients
// failed as unsendable (failedCount), and the credits its messages cost. Repeating it changes
// nothing.
func (s *Store) ResolveAudience(ctx context.Context, org, id uuid.UUID) (total, credits int32, err error) {
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
		WITH r AS (
			SELECT count(*)::int AS n, (count(*) FILTER (WHERE status = 'failed'))::int AS failed,
				coalesce(sum(credits), 0)::int AS credits
			FROM recipients WHERE campaign_id = $2),
		u AS (
			SELECT coalesce(jsonb_object_agg(reason, n), '{}') AS unsent FROM (
				SELECT unsent_reason AS reason, count(*) AS n FROM recipients
				WHERE campaign_id = $2 AND unsent_reason IS NOT NULL GROUP BY unsent_reason) x)
		UPDATE campaigns c SET audience_resolved = true, total_count = CASE WHEN c.audience_resolved THEN c.total_count ELSE r.n END,
			failed_count = CASE WHEN c.audience_resolved THEN c.failed_count ELSE c.failed_count + r.failed END,
			unsent = CASE WHEN c.audience_resolved THEN c.unsent ELSE u.unsent END,
			updated_at = now()
		FROM r, u WHERE c.organization_id = $1 AND c.id = $2
		RETURNING c.total_count, r.credits`, org, id).Scan(&total, &credits)
		if err != nil {
			return fmt.Errorf("resolve audience: %w", err)
		}
		return announce(ctx, tx, org, id)
	})
	if err != nil {
		return 0, 0, err
	}
	return total, credits, nil
}

// Advance moves a running campaign from one stage to the next (pending → queued → sending),
// also when it is paused in that stage (it then resumes into the next one), and records the
// credits held. It reports whether the campaign was in stage from.
func (s *Store) Advance(ctx context.Context, org, id uuid.UUID, from, to string, held int32) (moved bool, err error) {
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		moved, _, err = s.AdvanceTx(ctx, tx, org, id, from, to, held)
		return err
	})
	return moved, err
}

// AdvanceTx is Advance inside tx, which keeps the campaign's row locked once it moved; it
// also returns the campaign's status after the move (to, or paused).
func (s *Store) AdvanceTx(ctx context.Context, tx pgx.Tx, org, id uuid.UUID, from, to string, held int32) (moved bool, status string, err error) {
	err = tx.QueryRow(ctx, `
		UPDATE campaigns SET
			status = CASE WHEN status = $3 THEN $4 ELSE status END,
			paused_from = CASE WHEN paused_from = $3 THEN $4 ELSE paused_from END,
			held_credits = greatest(held_credits, $5), updated_at = now()
		WHERE organization_id = $1 AND id = $2 AND (status = $3 OR (status = 'paused' AND paused_from = $3))
		RETURNING status`, org, id, from, to, held).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("advance campaign: %w", err)
	}
	return true, status, announce(ctx, tx, org, id)
}

// Fail ends a campaign that cannot go on (pending or queued, or paused in one of them; an A/B
// test also while sending, since its rest is queued then) as failed with reason, inside tx.
// It reports whether it did.
func (s *Store) Fail(ctx context.Context, tx pgx.Tx, org, id uuid.UUID, reason string) (bool, error) {
	tag, err := tx.Exec(ctx, `
		UPDATE campaigns SET status = 'failed', paused_from = NULL, failure_reason = $3, updated_at = now()
		WHERE organization_id = $1 AND id = $2
			AND (status IN ('pending', 'queued') OR (status = 'paused' AND paused_from IN ('pending', 'queued'))
				OR (is_ab_test AND (status = 'sending' OR (status = 'paused' AND paused_from = 'sending'))))`,
		org, id, reason)
	if err != nil {
		return false, fmt.Errorf("fail campaign: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return false, nil
	}
	return true, announce(ctx, tx, org, id)
}

// EachUnqueued hands fn the recipients of a campaign that messaging has not queued yet, by
// contact id after the campaign's queue cursor (MarkQueued), in batches of up to size; with
// samplesOnly, only an A/B test's samples (its rest waits for the winner), else only the
// recipients that are no sample (every one of a campaign that is no A/B test). fn's error
// ends the walk.
//
// Each batch is a query of its own, done before fn runs: one query for the whole walk held
// its snapshot for the whole queue (14 s at 200,000 recipients), and while it did no other
// service's queue tables in the database (outboxes, River's jobs) could shed the rows they
// were done with, so their every read grew slower. The page is read along the primary key
// with sorts and bitmap scans off: the recipients were stored just before, so the planner's
// statistics may not know them, and it would otherwise sort the whole remainder per batch.
func (s *Store) EachUnqueued(ctx context.Context, campaign uuid.UUID, samplesOnly bool, size int, fn func([]Recipient) error) error {
	cursor, variant := "queued_through", "variant IS NULL"
	if samplesOnly {
		cursor, variant = "samples_queued_through", "variant IS NOT NULL"
	}
	var after uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT coalesce(`+cursor+`, '00000000-0000-0000-0000-000000000000') FROM campaigns WHERE id = $1`, campaign).Scan(&after)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // deleted
	}
	if err != nil {
		return fmt.Errorf("unqueued recipients: %w", err)
	}
	page := `SELECT contact_id, phone, body, credits, timezone, state FROM recipients
		WHERE campaign_id = $1 AND contact_id > $2 AND status = 'queued' AND ` + variant + `
		ORDER BY campaign_id, contact_id LIMIT $3`
	for {
		batch := make([]Recipient, 0, size)
		err := s.InTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL enable_sort = off; SET LOCAL enable_bitmapscan = off`); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, page, campaign, after, size)
			if err != nil {
				return err
			}
			var r Recipient
			_, err = pgx.ForEachRow(rows, []any{&r.ContactID, &r.Phone, &r.Body, &r.Credits, &r.Timezone, &r.State}, func() error {
				batch = append(batch, r)
				return nil
			})
			return err
		})
		if err != nil {
			return fmt.Errorf("unqueued recipients: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		if err := fn(batch); err != nil {
			return err
		}
		if len(batch) < size {
			return nil
		}
		after = batch[len(batch)-1].ContactID
	}
}

// MarkQueued moves the campaign's queue cursor (of its samples, with samples) to through, the
// last contact id of a batch messaging has stored; it never moves back, so two runs at once
// leave it at the furthest.
func (s *Store) MarkQueued(ctx context.Context, campaign uuid.UUID, samples bool, through uuid.UUID) error {
	cursor := "queued_through"
	if samples {
		cursor = "samples_queued_through"
	}
	_, err := s.pool.Exec(ctx, `UPDATE campaigns SET `+cursor+` = greatest(`+cursor+`, $2) WHERE id = $1`, campaign, through)
	if err != nil {
		return fmt.Errorf("mark recipients queued: %w", err)
	}
	return nil
}

// statusRank orders a recipient's statuses; a status only moves to a higher rank.
const statusRank = `CASE %s WHEN 'queued' THEN 0 WHEN 'sent' THEN 1 ELSE 2 END`

// Who names a campaign's recipient in an event: by its contact when the event carries it,
// else by phone. The recipients are not indexed by phone (that index was a large
// part of the audience's write), so a lookup by phone reads the campaign's recipients: only events
// published before messaging named the contact take it.
type Who struct {
	Contact uuid.UUID
	Phone   string
}

// match is the condition on recipients r that finds w, its value the query's argument $n.
func (w Who) match(n int) (cond string, arg any) {
	if w.Contact != uuid.Nil {
		return fmt.Sprintf("r.contact_id = $%d", n), w.Contact
	}
	return fmt.Sprintf("r.phone = $%d", n), w.Phone
}

// StatusChange is one status event of a campaign's recipient, as ApplyStatuses takes them.
type StatusChange struct {
	Who    Who
	Status string
	// CountFailure false records a failed status without counting a failure (a canceled
	// campaign's withdrawn message).
	CountFailure bool
	// Skipped records an uncounted failure as skipped (the organization's frequency cap)
	// rather than withdrawn.
	Skipped bool
}

// ApplyStatus moves the recipient who of campaign to status when that is forward, and the
// campaign's counters with it, inside tx: ApplyStatuses with one change. It reports whether
// the recipient moved (false also when campaign is not org's).
func (s *Store) ApplyStatus(ctx context.Context, tx pgx.Tx, org, campaign uuid.UUID, who Who, status string, countFailure bool) (bool, error) {
	moved, err := s.ApplyStatuses(ctx, tx, org, campaign, []StatusChange{{Who: who, Status: status, CountFailure: countFailure}})
	return moved > 0, err
}

// ApplyStatuses applies changes, a read's status events of org's campaign in the order they
// were published, inside tx, and returns how many recipients moved. A recipient only moves to
// a status of higher rank (statusRank), and the campaign's counters move with it: sent counts
// messages the carrier took (sent, delivered, undelivered), failed those that failed (before
// or after the carrier took them; withdrawn instead when the change does not count the
// failure, or skipped for the frequency cap), delivered those delivered.
//
// It takes one statement for the recipients and one for the counters (one more for an A/B
// test's samples) whatever the number of changes: the counters' statement locks the
// campaign's row, so one per event serialized all of a campaign's events. The result is that
// of the changes applied one at a time: a recipient's changes come down to its first one of
// the highest rank (the last one that would have moved it), and the counters of the moves
// along the way add up to those of the one move to it (queued → sent → delivered counts as
// queued → delivered, queued → sent → failed as queued → failed). The reduction is made per
// recipient row in the statement, since a change by contact and an older one by phone may
// name the same recipient.
func (s *Store) ApplyStatuses(ctx context.Context, tx pgx.Tx, org, campaign uuid.UUID, changes []StatusChange) (int, error) {
	if len(changes) == 0 {
		return 0, nil
	}
	contacts, phones := make([]uuid.UUID, len(changes)), make([]string, len(changes))
	statuses, counted, skipped := make([]string, len(changes)), make([]bool, len(changes)), make([]bool, len(changes))
	byPhone := []string{} // the phones of events that name no contact
	for i, c := range changes {
		contacts[i], phones[i], statuses[i], counted[i], skipped[i] = c.Who.Contact, c.Who.Phone, c.Status, c.CountFailure, c.Skipped
		if c.Who.Contact == uuid.Nil {
			byPhone = append(byPhone, c.Who.Phone)
		}
	}
	// Each read of recipients is bounded by the contacts (or phones) it looks for, not left to
	// a join: the audience was stored just before the send, so the planner's statistics may
	// not know it. Each contact is one primary key probe (a LATERAL subquery with LIMIT 1,
	// which the planner cannot turn into another join). Recipients are found by phone (one
	// read of the campaign's recipients) only for events that name no contact. The old status
	// is read at a second probe that locks the row, so a concurrent move is waited for and
	// seen, and the rows are locked in contact order, so two reads moving the same recipients
	// cannot deadlock. The update then joins only the rows found, by their key as the probe
	// read it, with no condition of its own on recipients: one (campaign_id = $1) let the
	// planner, believing the campaign had one recipient, scan the campaign's recipients and
	// rescan the locked set once per recipient (quadratic, 150,000 buffers for 300 changes).
	rows, err := tx.Query(ctx, `
		WITH ev AS (
			SELECT * FROM unnest($3::uuid[], $4::text[], $5::text[], $6::bool[], $8::bool[]) WITH ORDINALITY AS e(contact, phone, status, counted, skipped, ord)
		), hit AS (
			SELECT r.contact_id, e.status, e.counted, e.skipped, e.ord FROM ev e
			CROSS JOIN LATERAL (SELECT contact_id FROM recipients
				WHERE campaign_id = $1 AND contact_id = e.contact AND organization_id = $2 LIMIT 1) r
			UNION ALL
			SELECT r.contact_id, e.status, e.counted, e.skipped, e.ord FROM ev e JOIN recipients r ON r.phone = e.phone
			WHERE e.contact = '00000000-0000-0000-0000-000000000000' AND cardinality($7::text[]) > 0
				AND r.campaign_id = $1 AND r.organization_id = $2 AND r.phone = ANY($7::text[])
		), want AS (
			SELECT DISTINCT ON (contact_id) contact_id, status, counted, skipped FROM hit
			ORDER BY contact_id, `+fmt.Sprintf(statusRank, "status")+` DESC, ord
		), moving AS (
			SELECT o.campaign_id, o.contact_id, o.status AS before, w.status, w.counted, w.skipped
			FROM (SELECT * FROM want ORDER BY contact_id) w
			CROSS JOIN LATERAL (SELECT campaign_id, contact_id, status FROM recipients
				WHERE campaign_id = $1 AND contact_id = w.contact_id LIMIT 1 FOR UPDATE) o
			WHERE `+fmt.Sprintf(statusRank, "o.status")+` < `+fmt.Sprintf(statusRank, "w.status")+`
		)
		UPDATE recipients r SET status = m.status FROM moving m
		WHERE r.campaign_id = m.campaign_id AND r.contact_id = m.contact_id
		RETURNING m.before, m.status, m.counted, m.skipped, r.variant`, campaign, org, contacts, phones, statuses, counted, byPhone, skipped)
	if err != nil {
		return 0, fmt.Errorf("recipient statuses: %w", err)
	}
	var d counterDeltas
	var before, status string
	var countFailure, skip bool
	var variant *string
	moved := 0
	_, err = pgx.ForEachRow(rows, []any{&before, &status, &countFailure, &skip, &variant}, func() error {
		d.add(before, status, countFailure, skip, variant)
		moved++
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("recipient statuses: %w", err)
	}
	if moved == 0 {
		return 0, nil // unknown recipients, or no move forward
	}
	_, err = tx.Exec(ctx, `
		UPDATE campaigns SET sent_count = sent_count + $3, failed_count = failed_count + $4,
			withdrawn_count = withdrawn_count + $5, delivered_count = delivered_count + $6,
			skipped_count = skipped_count + $7, updated_at = now()
		WHERE organization_id = $1 AND id = $2`, org, campaign, d.sent, d.failed, d.withdrawn, d.delivered, d.skipped)
	if err != nil {
		return 0, fmt.Errorf("campaign counters: %w", err)
	}
	if d.aSent != 0 || d.bSent != 0 {
		if err := countVariantSent(ctx, tx, campaign, d.aSent, d.bSent); err != nil {
			return 0, err
		}
	}
	return moved, nil
}

// counterDeltas are the moves of a campaign's counters (and its A/B samples' sent counters)
// that its recipients' status moves make.
type counterDeltas struct {
	sent, failed, withdrawn, skipped, delivered int
	aSent, bSent                                int
}

// add counts one recipient's move from before to status, of variant (nil: no sample).
func (d *counterDeltas) add(before, status string, countFailure, skipped bool, variant *string) {
	wasSent := before == "sent"
	sent := 0
	switch status {
	case "sent", "undelivered":
		if !wasSent {
			sent = 1
		}
	case "delivered":
		d.delivered++
		if !wasSent {
			sent = 1
		}
	case "failed":
		if wasSent {
			sent = -1
		}
		switch {
		case countFailure:
			d.failed++
		case skipped:
			d.skipped++
		default:
			d.withdrawn++
		}
	}
	d.sent += sent
	if variant != nil {
		switch *variant {
		case VariantA:
			d.aSent += sent
		case VariantB:
			d.bSent += sent
		}
	}
}

// CountReply counts an inbound reply to campaign received at `at`, if it came after the
// campaign started.
func (s *Store) CountReply(ctx context.Context, tx pgx.Tx, org, campaign uuid.UUID, at time.Time) error {
	_, err := tx.Exec(ctx, `
		UPDATE campaigns SET reply_count = reply_count + 1
		WHERE organization_id = $1 AND id = $2 AND started_at IS NOT NULL AND started_at <= $3`, org, campaign, at)
	if err != nil {
		return fmt.Errorf("count reply: %w", err)
	}
	return nil
}

// CountClick counts one follow of a short link of org's campaign, inside tx; a campaign that
// no longer exists counts nothing.
func (s *Store) CountClick(ctx context.Context, tx pgx.Tx, org, campaign uuid.UUID) error {
	_, err := tx.Exec(ctx, `UPDATE campaigns SET click_count = click_count + 1 WHERE organization_id = $1 AND id = $2`, org, campaign)
	if err != nil {
		return fmt.Errorf("count click: %w", err)
	}
	return nil
}

// Complete ends a sending campaign whose every recipient is sent or failed (an A/B test's
// also decided), inside tx, and returns it when it did (nil when it is not done, or not
// sending).
func (s *Store) Complete(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) (*Campaign, error) {
	c, err := scanCampaign(tx.QueryRow(ctx, `
		UPDATE campaigns SET status = 'completed', completed_at = now(), updated_at = now()
		WHERE organization_id = $1 AND id = $2 AND status = 'sending' AND audience_resolved
			AND sent_count + failed_count + withdrawn_count + skipped_count >= total_count
			AND (NOT is_ab_test OR EXISTS (SELECT 1 FROM ab_tests t WHERE t.campaign_id = $2 AND t.winner IS NOT NULL))
		RETURNING `+columns, org, id))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &c, announce(ctx, tx, org, id)
}

// Begin moves a scheduled campaign of submission to pending when its time comes. It reports
// whether it did.
func (s *Store) Begin(ctx context.Context, org, id uuid.UUID, submission int32) (begun bool, err error) {
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
		UPDATE campaigns SET status = 'pending', started_at = now(), updated_at = now()
		WHERE organization_id = $1 AND id = $2 AND status = 'scheduled' AND submission = $3`, org, id, submission)
		if err != nil {
			return fmt.Errorf("begin campaign: %w", err)
		}
		if begun = tag.RowsAffected() == 1; !begun {
			return nil
		}
		return announce(ctx, tx, org, id)
	})
	return begun, err
}

// ZoneCount is how many of a campaign's recipients are queued with one zone and state.
type ZoneCount struct {
	Timezone string // the recipient's own zone; "" unknown
	State    string // the contact's US state; "" none given
	// Phone is one of their phones: with no State given, they share its area code, whose
	// state messaging keeps them to.
	Phone string
	Count int
}

// QueuedByZone counts org's campaign's queued recipients per zone and state (per area code
// where the contact gives no state), in one grouped read of the campaign's recipients: the
// completion estimate's input, never a row per recipient.
func (s *Store) QueuedByZone(ctx context.Context, org, campaign uuid.UUID) ([]ZoneCount, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT timezone, state, min(phone), count(*)::int FROM recipients
		WHERE campaign_id = $1 AND organization_id = $2 AND status = 'queued'
		GROUP BY timezone, state, CASE WHEN state = '' THEN left(phone, 5) END`, campaign, org)
	if err != nil {
		return nil, fmt.Errorf("queued recipients by zone: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ZoneCount, error) {
		var z ZoneCount
		return z, r.Scan(&z.Timezone, &z.State, &z.Phone, &z.Count)
	})
	if err != nil {
		return nil, fmt.Errorf("queued recipients by zone: %w", err)
	}
	return out, nil
}
