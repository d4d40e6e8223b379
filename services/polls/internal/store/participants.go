package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/sqllike"
)

// Participant statuses (spec section 3) and what a step sends.
const (
	NotStarted = "not_started"
	InProgress = "in_progress"
	Completed  = "completed"
	Terminated = "terminated"

	PendingIntro    = "intro"
	PendingQuestion = "question"
	PendingReask    = "reask"
	PendingOutro    = "outro"
)

// Why a participant was terminated.
const (
	ReasonOptedOut   = "opted_out"
	ReasonPollClosed = "poll_closed"
	ReasonTimedOut   = "timed_out"
	// ReasonTextTooLong: the next text for the participant, merge fields filled in, was over
	// what one message carries (smsrules.MaxTextLength), so it could not be asked.
	ReasonTextTooLong = "text_too_long"
)

// Participant is one row of participants.
type Participant struct {
	ID                uuid.UUID
	PollID            uuid.UUID
	OrgID             uuid.UUID
	ContactID         uuid.UUID
	Phone             string
	FirstName         string
	LastName          string
	Member            []byte // protojson contacts.v1.AudienceMember
	RecipientTimezone string
	Status            string
	TerminationReason *string
	CurrentQuestion   int32
	Pending           *string
	Step              int32
	SentStep          int32
	// AskedStep is the last step whose message reached the carrier: a reply answers only
	// once AskedStep = Step.
	AskedStep      int32
	Reasks         int32
	ResponseCount  int32
	StartedAt      *time.Time
	CompletedAt    *time.Time
	LastResponseAt *time.Time
	// FromPhoneNumberID is the pool number the participant hears from (nil: the poll's).
	FromPhoneNumberID *uuid.UUID
}

// NewParticipant is an audience member stored at the start.
type NewParticipant struct {
	ContactID         uuid.UUID
	Phone             string
	FirstName         string
	LastName          string
	Member            []byte
	RecipientTimezone string
	Estimate          int32
	// FromPhoneNumberID is the pool number picked for the participant (nil without a pool).
	FromPhoneNumberID *uuid.UUID
}

const participantColumns = `id, poll_id, organization_id, contact_id, phone, first_name, last_name, member,
	recipient_timezone, status, termination_reason, current_question, pending, step, sent_step, asked_step, reasks,
	response_count, started_at, completed_at, last_response_at, from_phone_number_id`

func scanParticipant(row pgx.Row) (Participant, error) {
	var p Participant
	err := row.Scan(&p.ID, &p.PollID, &p.OrgID, &p.ContactID, &p.Phone, &p.FirstName, &p.LastName, &p.Member,
		&p.RecipientTimezone, &p.Status, &p.TerminationReason, &p.CurrentQuestion, &p.Pending, &p.Step, &p.SentStep,
		&p.AskedStep, &p.Reasks, &p.ResponseCount, &p.StartedAt, &p.CompletedAt, &p.LastResponseAt, &p.FromPhoneNumberID)
	if err != nil {
		return p, fmt.Errorf("scan participant: %w", err)
	}
	return p, nil
}

// LastParticipant is the highest contact id stored for poll (the audience streams in contact
// id order, so a resumed start continues after it); uuid.Nil when none is.
func (s *Store) LastParticipant(ctx context.Context, poll uuid.UUID) (uuid.UUID, error) {
	var last uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT contact_id FROM participants WHERE poll_id = $1 ORDER BY contact_id DESC LIMIT 1`, poll).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, nil
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("last participant: %w", err)
	}
	return last, nil
}

// AddParticipants stores a batch of the audience as not_started; a contact already stored (a
// retried batch) is kept as it is.
func (s *Store) AddParticipants(ctx context.Context, org, poll uuid.UUID, ps []NewParticipant) error {
	n := len(ps)
	ids, contacts, phones, first, last := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]string, n), make([]string, n), make([]string, n)
	members, zones, estimates, from := make([]string, n), make([]string, n), make([]int32, n), make([]*uuid.UUID, n)
	for i, p := range ps {
		ids[i], contacts[i], phones[i], first[i], last[i] = uuid.Must(uuid.NewV7()), p.ContactID, p.Phone, p.FirstName, p.LastName
		members[i], zones[i], estimates[i], from[i] = string(p.Member), p.RecipientTimezone, p.Estimate, p.FromPhoneNumberID
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO participants (poll_id, organization_id, id, contact_id, phone, first_name, last_name, member, recipient_timezone, estimate,
			from_phone_number_id)
		SELECT $1, $2, id, contact_id, phone, first_name, last_name, member::jsonb, zone, estimate, from_id
		FROM unnest($3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::int[], $11::uuid[])
			AS t(id, contact_id, phone, first_name, last_name, member, zone, estimate, from_id)
		ON CONFLICT DO NOTHING`, poll, org, ids, contacts, phones, first, last, members, zones, estimates, from)
	if err != nil {
		return fmt.Errorf("add participants: %w", err)
	}
	return nil
}

// Estimate is the sum of the participants' estimates: the credits the poll's hold must cover.
func (s *Store) Estimate(ctx context.Context, poll uuid.UUID) (int32, error) {
	var n int32
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(estimate), 0)::int FROM participants WHERE poll_id = $1`, poll).Scan(&n); err != nil {
		return 0, fmt.Errorf("poll estimate: %w", err)
	}
	return n, nil
}

// StartSending records that the poll's audience is stored and its hold placed: participants
// may begin, their questions respecting quiet hours in zone.
func (s *Store) StartSending(ctx context.Context, org, id uuid.UUID, zone string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE polls SET sending = true, quiet_zone = $3 WHERE organization_id = $1 AND id = $2`, org, id, zone); err != nil {
		return fmt.Errorf("poll sending: %w", err)
	}
	return nil
}

// SetQuietZone changes the zone a sending poll's questions respect quiet hours in.
func (s *Store) SetQuietZone(ctx context.Context, org, id uuid.UUID, zone string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE polls SET quiet_zone = $3 WHERE organization_id = $1 AND id = $2`, org, id, zone); err != nil {
		return fmt.Errorf("poll quiet zone: %w", err)
	}
	return nil
}

// Begun is a participant that moved to in_progress and whose first step is to be sent.
type Begun struct {
	Participant uuid.UUID
	Poll        uuid.UUID
	Org         uuid.UUID
	Contact     uuid.UUID
	Step        int32
}

// BeginBatch moves up to limit of poll's not_started participants to in_progress (step 1: the
// intro and question 1), skipping contacts in progress in another poll of the organization:
// they wait until it ends for them (BeginWaiting).
func (s *Store) BeginBatch(ctx context.Context, tx pgx.Tx, org, poll uuid.UUID, limit int, now time.Time) ([]Begun, error) {
	return collectBegun(tx.Query(ctx, `
		UPDATE participants p SET status = 'in_progress', step = 1, pending = 'intro', current_question = 1,
			started_at = $4, last_activity_at = $4
		WHERE p.id IN (
			SELECT w.id FROM participants w
			WHERE w.poll_id = $2 AND w.organization_id = $1 AND w.status = 'not_started'
				AND NOT EXISTS (SELECT 1 FROM participants o WHERE o.organization_id = w.organization_id
					AND o.contact_id = w.contact_id AND o.status = 'in_progress')
			ORDER BY w.id LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING p.id, p.poll_id, p.organization_id, p.contact_id, p.step`, org, poll, limit, now))
}

// BeginWaiting begins the contact's oldest waiting participation in a sending, active poll of
// the organization, once another poll ended for the contact; none when it waits nowhere.
func (s *Store) BeginWaiting(ctx context.Context, tx pgx.Tx, org, contact uuid.UUID, now time.Time) ([]Begun, error) {
	return collectBegun(tx.Query(ctx, `
		UPDATE participants p SET status = 'in_progress', step = 1, pending = 'intro', current_question = 1,
			started_at = $3, last_activity_at = $3
		WHERE p.id = (
			SELECT w.id FROM participants w JOIN polls pl ON pl.id = w.poll_id
			WHERE w.organization_id = $1 AND w.contact_id = $2 AND w.status = 'not_started'
				AND pl.status = 'active' AND pl.sending
				AND NOT EXISTS (SELECT 1 FROM participants o WHERE o.organization_id = $1
					AND o.contact_id = $2 AND o.status = 'in_progress')
			ORDER BY pl.started_at, pl.id LIMIT 1 FOR UPDATE OF w)
		RETURNING p.id, p.poll_id, p.organization_id, p.contact_id, p.step`, org, contact, now))
}

// BeginFree begins, across organizations, up to limit waiting participations whose contact
// is in no poll now (each contact's oldest poll first): the sweep's catch-up for a contact
// freed while its next poll was still starting.
func (s *Store) BeginFree(ctx context.Context, tx pgx.Tx, limit int, now time.Time) ([]Begun, error) {
	return collectBegun(tx.Query(ctx, `
		UPDATE participants p SET status = 'in_progress', step = 1, pending = 'intro', current_question = 1,
			started_at = $1, last_activity_at = $1
		WHERE p.id IN (
			SELECT DISTINCT ON (w.organization_id, w.contact_id) w.id FROM participants w JOIN polls pl ON pl.id = w.poll_id
			WHERE w.status = 'not_started' AND pl.status = 'active' AND pl.sending
				AND NOT EXISTS (SELECT 1 FROM participants o WHERE o.organization_id = w.organization_id
					AND o.contact_id = w.contact_id AND o.status = 'in_progress')
			ORDER BY w.organization_id, w.contact_id, pl.started_at, pl.id LIMIT $2)
			AND p.status = 'not_started'
		RETURNING p.id, p.poll_id, p.organization_id, p.contact_id, p.step`, now, limit))
}

func collectBegun(rows pgx.Rows, err error) ([]Begun, error) {
	if err != nil {
		return nil, fmt.Errorf("begin participants: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Begun, error) {
		var b Begun
		return b, r.Scan(&b.Participant, &b.Poll, &b.Org, &b.Contact, &b.Step)
	})
	if err != nil {
		return nil, fmt.Errorf("begin participants: %w", err)
	}
	return out, nil
}

// Unsent lists poll's participants with a step not yet handed to messaging (a pause, a lost
// job), after the participant id after, up to limit.
func (s *Store) Unsent(ctx context.Context, poll, after uuid.UUID, limit int) ([]Begun, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, poll_id, organization_id, contact_id, step FROM participants
		WHERE poll_id = $1 AND id > $2 AND sent_step < step AND status IN ('in_progress', 'completed')
		ORDER BY id LIMIT $3`, poll, after, limit)
	return collectBegun(rows, err)
}

// LockParticipant reads one participant of org under its row lock.
func (s *Store) LockParticipant(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) (Participant, error) {
	p, err := scanParticipant(tx.QueryRow(ctx, `SELECT `+participantColumns+` FROM participants
		WHERE organization_id = $1 AND id = $2 FOR UPDATE`, org, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	return p, err
}

// InProgress is the contact's participation in progress in org (one at most), under its row
// lock; ErrNotFound when the contact is in no poll.
func (s *Store) InProgress(ctx context.Context, tx pgx.Tx, org, contact uuid.UUID) (Participant, error) {
	p, err := scanParticipant(tx.QueryRow(ctx, `SELECT `+participantColumns+` FROM participants
		WHERE organization_id = $1 AND contact_id = $2 AND status = 'in_progress' FOR UPDATE`, org, contact))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	return p, err
}

// MarkSent records that p's step was handed to messaging; asked too when the step sends
// nothing (a text merged to nothing), so that no status event is waited for.
func (s *Store) MarkSent(ctx context.Context, tx pgx.Tx, p *Participant, asked bool, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE participants SET sent_step = step, last_activity_at = $2,
			asked_step = CASE WHEN $4 THEN step ELSE asked_step END
		WHERE id = $1 AND step = $3`, p.ID, now, p.Step, asked)
	if err != nil {
		return fmt.Errorf("participant sent: %w", err)
	}
	return nil
}

// MarkAsked records that the contact's step of poll reached the carrier (its message's status
// event said sent or delivered): a reply now answers it. The silence timeout runs from then,
// not from the hand-off (a question held overnight has not been waiting for an answer). A
// status event of an earlier step, or repeated, changes nothing; false when nothing changed.
func (s *Store) MarkAsked(ctx context.Context, tx pgx.Tx, org, poll, contact uuid.UUID, step int32, now time.Time) (bool, error) {
	tag, err := tx.Exec(ctx, `UPDATE participants SET asked_step = step, last_activity_at = $5
		WHERE organization_id = $1 AND poll_id = $2 AND contact_id = $3 AND step = $4 AND asked_step < step`,
		org, poll, contact, step, now)
	if err != nil {
		return false, fmt.Errorf("participant asked: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// SaveProgress writes p's position after a reply: question, pending step, re-asks, status.
func (s *Store) SaveProgress(ctx context.Context, tx pgx.Tx, p *Participant, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE participants SET status = $2, current_question = $3, pending = $4, step = $5,
			reasks = $6, response_count = $7, last_response_at = $8, completed_at = $9, last_activity_at = $10
		WHERE id = $1`, p.ID, p.Status, p.CurrentQuestion, p.Pending, p.Step, p.Reasks, p.ResponseCount,
		p.LastResponseAt, p.CompletedAt, now)
	if err != nil {
		return fmt.Errorf("participant progress: %w", err)
	}
	return nil
}

// Response is one stored answer.
type Response struct {
	ParticipantID  uuid.UUID
	QuestionNumber int32
	ResponseCode   string
	Answer         string
	OptionCode     string
	MessageID      *uuid.UUID
	ReceivedAt     time.Time
}

// AddResponse stores p's answer to a question and publishes it (EventResponseRecorded); false
// when it already has one (the same reply handled twice).
func (s *Store) AddResponse(ctx context.Context, tx pgx.Tx, p *Participant, r Response) (bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO responses (participant_id, poll_id, organization_id, question_number,
			response_code, answer, option_code, message_id, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
		p.ID, p.PollID, p.OrgID, r.QuestionNumber, r.ResponseCode, r.Answer, r.OptionCode, r.MessageID, r.ReceivedAt)
	if err != nil {
		return false, fmt.Errorf("add response: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	return true, publishResponse(ctx, tx, p, r)
}

// CountCompleted adds one completed participant to the poll and returns the new count.
func (s *Store) CountCompleted(ctx context.Context, tx pgx.Tx, org, poll uuid.UUID) (int32, error) {
	var n int32
	err := tx.QueryRow(ctx, `UPDATE polls SET completed_count = completed_count + 1 WHERE organization_id = $1 AND id = $2
		RETURNING completed_count`, org, poll).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count completed: %w", err)
	}
	return n, nil
}

// Ended is a participation that ended (terminated, deleted) and the contact it freed.
type Ended struct {
	Poll    uuid.UUID
	Contact uuid.UUID
	// Was is the participation's status before it ended: in_progress frees the contact to
	// begin a poll it waits for.
	Was string
}

// TerminateContact ends every participation of the contact in org's polls that are not
// completed yet (in progress or waiting), with reason: an opt-out.
func (s *Store) TerminateContact(ctx context.Context, tx pgx.Tx, org, contact uuid.UUID, reason string, now time.Time) ([]Ended, error) {
	return collectEnded(tx.Query(ctx, `
		WITH old AS (SELECT id, status FROM participants
			WHERE organization_id = $1 AND contact_id = $2 AND status IN ('not_started', 'in_progress') FOR UPDATE)
		UPDATE participants p SET status = 'terminated', termination_reason = $3, completed_at = $4, pending = NULL
		FROM old WHERE p.id = old.id
		RETURNING p.poll_id, p.contact_id, old.status`, org, contact, reason, now))
}

// TerminateParticipant ends one participation in progress with reason.
func (s *Store) TerminateParticipant(ctx context.Context, tx pgx.Tx, org, id uuid.UUID, reason string, now time.Time) ([]Ended, error) {
	return collectEnded(tx.Query(ctx, `
		UPDATE participants SET status = 'terminated', termination_reason = $3, completed_at = $4, pending = NULL
		WHERE organization_id = $1 AND id = $2 AND status = 'in_progress'
		RETURNING poll_id, contact_id, 'in_progress'`, org, id, reason, now))
}

// TerminatePoll ends poll's participants in progress (the poll closed).
func (s *Store) TerminatePoll(ctx context.Context, tx pgx.Tx, org, poll uuid.UUID, now time.Time) ([]Ended, error) {
	return collectEnded(tx.Query(ctx, `
		UPDATE participants SET status = 'terminated', termination_reason = 'poll_closed', completed_at = $3, pending = NULL
		WHERE organization_id = $1 AND poll_id = $2 AND status = 'in_progress'
		RETURNING poll_id, contact_id, 'in_progress'`, org, poll, now))
}

// TerminateSilent ends up to limit participants of active polls silent since longer than their
// poll's participantTimeoutHours (hour long each), across organizations.
func (s *Store) TerminateSilent(ctx context.Context, tx pgx.Tx, hour time.Duration, now time.Time, limit int) ([]Ended, []uuid.UUID, error) {
	rows, err := tx.Query(ctx, `
		UPDATE participants p SET status = 'terminated', termination_reason = 'timed_out', completed_at = $1, pending = NULL
		WHERE p.id IN (
			SELECT w.id FROM participants w JOIN polls pl ON pl.id = w.poll_id
			WHERE w.status = 'in_progress' AND pl.status = 'active'
				AND w.last_activity_at < $1::timestamptz - make_interval(secs => pl.participant_timeout_hours * $2::float8)
			ORDER BY w.last_activity_at LIMIT $3 FOR UPDATE OF w SKIP LOCKED)
		RETURNING p.poll_id, p.contact_id, 'in_progress', p.organization_id`, now, hour.Seconds(), limit)
	if err != nil {
		return nil, nil, fmt.Errorf("terminate silent participants: %w", err)
	}
	var ended []Ended
	var orgs []uuid.UUID
	for rows.Next() {
		var e Ended
		var org uuid.UUID
		if err := rows.Scan(&e.Poll, &e.Contact, &e.Was, &org); err != nil {
			return nil, nil, fmt.Errorf("terminate silent participants: %w", err)
		}
		ended, orgs = append(ended, e), append(orgs, org)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("terminate silent participants: %w", err)
	}
	return ended, orgs, nil
}

// DeleteContact removes the contact's participations and responses in org (contact.deleted),
// taking them out of their polls' counts.
func (s *Store) DeleteContact(ctx context.Context, tx pgx.Tx, org, contact uuid.UUID) ([]Ended, error) {
	ended, err := collectEnded(tx.Query(ctx, `
		DELETE FROM participants WHERE organization_id = $1 AND contact_id = $2
		RETURNING poll_id, contact_id, status`, org, contact))
	if err != nil {
		return nil, err
	}
	for _, e := range ended {
		completed := 0
		if e.Was == Completed {
			completed = 1
		}
		if _, err := tx.Exec(ctx, `UPDATE polls SET participant_count = greatest(participant_count - 1, 0),
				completed_count = greatest(completed_count - $3, 0) WHERE organization_id = $1 AND id = $2`,
			org, e.Poll, completed); err != nil {
			return nil, fmt.Errorf("uncount deleted participant: %w", err)
		}
	}
	return ended, nil
}

func collectEnded(rows pgx.Rows, err error) ([]Ended, error) {
	if err != nil {
		return nil, fmt.Errorf("end participants: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Ended, error) {
		var e Ended
		return e, r.Scan(&e.Poll, &e.Contact, &e.Was)
	})
	if err != nil {
		return nil, fmt.Errorf("end participants: %w", err)
	}
	return out, nil
}

// Finished completes an active or paused poll whose audience is resolved and whose every
// participant is completed or terminated; false otherwise.
func (s *Store) Finished(ctx context.Context, tx pgx.Tx, org, poll uuid.UUID, now time.Time) (bool, error) {
	tag, err := tx.Exec(ctx, `UPDATE polls SET status = 'completed', completed_at = $3, updated_at = $3
		WHERE organization_id = $1 AND id = $2 AND status = 'active' AND sending
			AND NOT EXISTS (SELECT 1 FROM participants WHERE poll_id = $2 AND status IN ('not_started', 'in_progress'))`,
		org, poll, now)
	if err != nil {
		return false, fmt.Errorf("finish poll: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ParticipantFilter selects a page of a poll's participants.
type ParticipantFilter struct {
	Status string
	Search string
	Limit  int
}

// Participants lists poll's participants matching f, oldest first, with their responses.
func (s *Store) Participants(ctx context.Context, org, poll uuid.UUID, f ParticipantFilter) ([]Participant, map[uuid.UUID][]Response, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+participantColumns+` FROM participants
		WHERE organization_id = $1 AND poll_id = $2 AND ($3 = '' OR status = $3)
			AND ($4 = '' OR first_name ILIKE $6 ESCAPE '\' OR last_name ILIKE $6 ESCAPE '\' OR phone LIKE $6 ESCAPE '\')
		ORDER BY id LIMIT $5`, org, poll, f.Status, f.Search, f.Limit, sqllike.Contains(f.Search))
	if err != nil {
		return nil, nil, fmt.Errorf("list participants: %w", err)
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Participant, error) { return scanParticipant(r) })
	if err != nil {
		return nil, nil, fmt.Errorf("list participants: %w", err)
	}
	ids := make([]uuid.UUID, len(ps))
	for i := range ps {
		ids[i] = ps[i].ID
	}
	rows, err = s.pool.Query(ctx, `SELECT participant_id, question_number, response_code, answer, option_code, message_id, received_at
		FROM responses WHERE participant_id = ANY($1) ORDER BY received_at, question_number`, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("list responses: %w", err)
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Response, error) {
		var x Response
		return x, r.Scan(&x.ParticipantID, &x.QuestionNumber, &x.ResponseCode, &x.Answer, &x.OptionCode, &x.MessageID, &x.ReceivedAt)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list responses: %w", err)
	}
	out := map[uuid.UUID][]Response{}
	for _, r := range rs {
		out[r.ParticipantID] = append(out[r.ParticipantID], r)
	}
	return ps, out, nil
}

// PruneHandled deletes up to limit records of inbound messages read as replies before cutoff,
// and returns how many it deleted.
func (s *Store) PruneHandled(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM handled_inbound WHERE (organization_id, message_id) IN (
		SELECT organization_id, message_id FROM handled_inbound WHERE handled_at < $1 ORDER BY handled_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("prune handled inbound: %w", err)
	}
	return tag.RowsAffected(), nil
}

// FirstHandling records that the inbound message was read as a poll reply; false when it was
// already (its event delivered again).
func (s *Store) FirstHandling(ctx context.Context, tx pgx.Tx, org, message uuid.UUID) (bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO handled_inbound (organization_id, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, org, message)
	if err != nil {
		return false, fmt.Errorf("record handled inbound: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
