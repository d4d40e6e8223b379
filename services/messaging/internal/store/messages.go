package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/outbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
)

// Directions and statuses of the message log.
const (
	Incoming = "incoming"
	Outgoing = "outgoing"

	StatusQueued      = "queued"
	StatusSending     = "sending"
	StatusSent        = "sent"
	StatusDelivered   = "delivered"
	StatusUndelivered = "undelivered"
	StatusFailed      = "failed"
)

// Sources of messages: what an inbound message answers is the source of the latest outgoing one.
const (
	SourceReply    = "reply"
	SourceCampaign = "campaign"
	SourcePoll     = "poll"
	SourceSystem   = "system"
	// SourceTest is a campaign's test copy: free, sent whatever the hour, counted by no source.
	SourceTest = "test"
	// SourceAutoReply is a campaign's automatic answer to an inbound message (source id the
	// campaign): sent whatever the hour and billed like a reply; an answer to it is the
	// campaign's.
	SourceAutoReply = "auto_reply"
	SourceInbound   = "inbound"
)

// Message is one row of the message log.
type Message struct {
	ID                uuid.UUID
	OrgID             uuid.UUID
	Direction         string
	ContactPhone      string
	OurNumber         string
	PhoneNumberID     *uuid.UUID
	Body              string
	MediaURLs         []string
	IsMMS             bool
	Status            string
	Provider          string
	ProviderMessageID string
	ErrorCode         string
	Credits           int32
	Billable          bool
	HoldID            string
	SourceKind        string
	SourceID          string
	DedupeKey         string
	QuietTimezone     string
	// RecipientTimezone is the recipient's own zone ("" unknown); quiet hours apply there too.
	RecipientTimezone string
	// RecipientState is the recipient's US state ("" unknown, or state rules off for its
	// organization); its quiet-hours law applies too (quiethours.StateRules).
	RecipientState string

	AttributedTo     *uuid.UUID
	Sentiment        string
	SentimentScore   float64
	Category         string
	RequiresResponse bool
	OptOutDetected   bool
	Keyword          string

	// CreatedAt is when the row was made; it never changes.
	CreatedAt time.Time
	// ThreadAt is the message's place in its thread: its creation, or for a queued message
	// its claim (a keyword's answer keeps its place right after the message it answers).
	ThreadAt time.Time
	// DispatchedAt is when the number's throttle let the message go to the carrier.
	DispatchedAt *time.Time
	SentAt       *time.Time
	StatusAt     *time.Time
}

const messageColumns = `id, organization_id, direction, contact_phone, our_number, phone_number_id, body, media_urls,
	is_mms, coalesce(status, ''), provider, coalesce(provider_message_id, ''), coalesce(error_code, ''), credits, billable,
	coalesce(hold_id, ''), source_kind, coalesce(source_id, ''), coalesce(dedupe_key, ''), coalesce(quiet_hours_timezone, ''),
	coalesce(recipient_timezone, ''), coalesce(recipient_state, ''), attributed_message_id, coalesce(sentiment, ''), coalesce(sentiment_score, 0), coalesce(category, ''),
	coalesce(requires_response, false), coalesce(opt_out_detected, false), coalesce(keyword, ''),
	created_at, thread_at, dispatched_at, sent_at, status_at`

// scanMessage reads messageColumns, then any columns selected after them into extra.
func scanMessage(row pgx.Row, extra ...any) (Message, error) {
	var m Message
	dest := []any{&m.ID, &m.OrgID, &m.Direction, &m.ContactPhone, &m.OurNumber, &m.PhoneNumberID, &m.Body, &m.MediaURLs,
		&m.IsMMS, &m.Status, &m.Provider, &m.ProviderMessageID, &m.ErrorCode, &m.Credits, &m.Billable,
		&m.HoldID, &m.SourceKind, &m.SourceID, &m.DedupeKey, &m.QuietTimezone,
		&m.RecipientTimezone, &m.RecipientState, &m.AttributedTo, &m.Sentiment, &m.SentimentScore, &m.Category,
		&m.RequiresResponse, &m.OptOutDetected, &m.Keyword,
		&m.CreatedAt, &m.ThreadAt, &m.DispatchedAt, &m.SentAt, &m.StatusAt}
	err := row.Scan(append(dest, extra...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, ErrNotFound
	}
	if err != nil {
		return Message{}, fmt.Errorf("scan message: %w", err)
	}
	return m, nil
}

// messages runs a query of messageColumns and collects its rows; what names it in errors.
func (s *Store) messages(ctx context.Context, what, q string, args ...any) ([]Message, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Message, error) { return scanMessage(r) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return msgs, nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// InsertOutgoing stores an outgoing message and moves its thread, inside tx. A message whose
// dedupe key the organization already used is not stored again: inserted is false and m.ID is
// set to the existing message's id.
func (s *Store) InsertOutgoing(ctx context.Context, tx pgx.Tx, m *Message) (inserted bool, err error) {
	ids, err := s.InsertOutgoingMany(ctx, tx, []*Message{m})
	return len(ids) == 1, err
}

// InsertOutgoingMany stores outgoing messages and moves the threads of those not queued, in
// one statement inside tx, and returns the ids of those stored. A message whose dedupe key its organization already
// used (before or earlier in msgs) is not stored: its ID is set to the existing message's.
func (s *Store) InsertOutgoingMany(ctx context.Context, tx pgx.Tx, msgs []*Message) (inserted []uuid.UUID, err error) {
	var cols outgoingColumns
	for _, m := range msgs {
		if err := cols.add(m); err != nil {
			return nil, err
		}
	}
	rows, err := tx.Query(ctx, `WITH input AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[],
			$6::text[], $7::text[], $8::boolean[], $9::text[], $10::text[], $11::int[], $12::boolean[], $13::text[],
			$14::text[], $15::text[], $16::text[], $17::text[], $18::timestamptz[], $19::text[], $20::text[]) AS t`+outgoingInput+`)`+insertOutgoing,
		cols.args()...)
	if err != nil {
		return nil, fmt.Errorf("insert outgoing messages: %w", err)
	}
	created, err := collectCreated(rows)
	if err != nil {
		return nil, fmt.Errorf("insert outgoing messages: %w", err)
	}
	if err := outbox.EnqueueMany(ctx, tx, createdEvents(created)); err != nil {
		return nil, err
	}
	inserted = make([]uuid.UUID, len(created))
	for i, m := range created {
		inserted[i] = m.ID
	}
	if len(inserted) < len(msgs) {
		if err := s.resolveDuplicates(ctx, tx, msgs, inserted); err != nil {
			return nil, err
		}
	}
	return inserted, nil
}

// EventCreated is the outbox event type of MessagesCreated.
const EventCreated = "messages.created"

// createdPerEvent bounds the messages one MessagesCreated event names, and so the size of its
// outbox row and stream entry.
const createdPerEvent = 250

// outgoingInput names the columns of insertOutgoing's input, in outgoingColumns.args' order.
const outgoingInput = `(id, organization_id, contact_phone, our_number, phone_number_id, body, media, is_mms, status, provider,
	credits, billable, hold_id, source_kind, source_id, dedupe_key, quiet_hours_timezone, created_at, recipient_timezone, recipient_state)`

// insertOutgoing stores the outgoing messages of the CTE input (outgoingInput's columns) and
// moves the threads of those not queued, in one statement; a message whose dedupe key its
// organization already used (before or earlier in input) is not stored. It returns what
// collectCreated reads of each message stored.
const insertOutgoing = `, stored AS (
		INSERT INTO messages (id, organization_id, direction, contact_phone, our_number, phone_number_id, body,
			media_urls, is_mms, status, provider, credits, billable, hold_id, source_kind, source_id, dedupe_key,
			quiet_hours_timezone, recipient_timezone, recipient_state, created_at, thread_at)
		SELECT id, organization_id, 'outgoing', contact_phone, our_number, nullif(phone_number_id, '')::uuid, body,
			ARRAY(SELECT jsonb_array_elements_text(media::jsonb)), is_mms, status, provider, credits, billable,
			nullif(hold_id, ''), source_kind, nullif(source_id, ''), nullif(dedupe_key, ''),
			nullif(quiet_hours_timezone, ''), nullif(recipient_timezone, ''), nullif(recipient_state, ''), created_at, created_at
		FROM input
		ON CONFLICT (organization_id, dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
		RETURNING id, organization_id, contact_phone, body, status, source_kind, source_id, created_at
	), threads AS (
		-- A queued message joins its thread when it is claimed (Claim).
		INSERT INTO conversations AS c (organization_id, phone, last_message, last_message_at, last_direction, unread_count)
		SELECT DISTINCT ON (organization_id, contact_phone) organization_id, contact_phone, body, created_at, 'outgoing', 0
		FROM stored WHERE status <> 'queued' ORDER BY organization_id, contact_phone, created_at DESC, id DESC
		` + conversationUpsert + `
	)
	SELECT id, organization_id, contact_phone, status, coalesce(source_kind, ''), coalesce(source_id, ''), created_at FROM stored`

// collectCreated reads insertOutgoing's rows: what a MessagesCreated event tells of each
// message stored.
func collectCreated(rows pgx.Rows) ([]Message, error) {
	var m Message
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Message, error) {
		err := row.Scan(&m.ID, &m.OrgID, &m.ContactPhone, &m.Status, &m.SourceKind, &m.SourceID, &m.CreatedAt)
		return m, err
	})
}

// createdEvents are the MessagesCreated events of messages just stored: each of an
// organization's runs of messages, in createdPerEvent chunks.
func createdEvents(stored []Message) []outbox.Event {
	var events []outbox.Event
	var ev *eventsv1.MessagesCreated
	for i, m := range stored {
		if i == 0 || m.OrgID != stored[i-1].OrgID || len(ev.Messages) == createdPerEvent {
			ev = &eventsv1.MessagesCreated{OrganizationId: m.OrgID.String()}
			events = append(events, outbox.Event{Type: EventCreated, OrgID: m.OrgID, Payload: ev})
		}
		ev.Messages = append(ev.Messages, &eventsv1.MessageCreated{
			OrganizationId: m.OrgID.String(),
			MessageId:      m.ID.String(),
			To:             m.ContactPhone,
			SourceKind:     m.SourceKind,
			SourceId:       m.SourceID,
			Status:         m.Status,
			CreatedAt:      timestamppb.New(m.CreatedAt),
		})
	}
	return events
}

// outgoingColumns holds a batch of outgoing messages column by column, the shape unnest takes.
type outgoingColumns struct {
	ids, orgs                                                   []uuid.UUID
	phones, ours, numberIDs, bodies, media, statuses, providers []string
	holds, kinds, sources, keys, zones, recipientZones, states  []string
	mms, billable                                               []bool
	credits                                                     []int32
	created                                                     []time.Time
}

func (c *outgoingColumns) add(m *Message) error {
	urls, err := json.Marshal(append([]string{}, m.MediaURLs...))
	if err != nil {
		return fmt.Errorf("encode media urls: %w", err)
	}
	numberID := ""
	if m.PhoneNumberID != nil {
		numberID = m.PhoneNumberID.String()
	}
	c.ids, c.orgs = append(c.ids, m.ID), append(c.orgs, m.OrgID)
	c.phones, c.ours, c.numberIDs = append(c.phones, m.ContactPhone), append(c.ours, m.OurNumber), append(c.numberIDs, numberID)
	c.bodies, c.media, c.statuses = append(c.bodies, m.Body), append(c.media, string(urls)), append(c.statuses, m.Status)
	c.providers, c.holds, c.kinds = append(c.providers, m.Provider), append(c.holds, m.HoldID), append(c.kinds, m.SourceKind)
	c.sources, c.keys, c.zones = append(c.sources, m.SourceID), append(c.keys, m.DedupeKey), append(c.zones, m.QuietTimezone)
	c.recipientZones, c.states = append(c.recipientZones, m.RecipientTimezone), append(c.states, m.RecipientState)
	c.mms, c.billable = append(c.mms, m.IsMMS), append(c.billable, m.Billable)
	c.credits, c.created = append(c.credits, m.Credits), append(c.created, m.CreatedAt)
	return nil
}

// args are the columns in the order of InsertOutgoingMany's unnest.
func (c *outgoingColumns) args() []any {
	return []any{c.ids, c.orgs, c.phones, c.ours, c.numberIDs, c.bodies, c.media, c.mms, c.statuses, c.providers,
		c.credits, c.billable, c.holds, c.kinds, c.sources, c.keys, c.zones, c.created, c.recipientZones, c.states}
}

// resolveDuplicates sets the ID of each message that was not inserted to the id of the
// message that already holds its dedupe key.
func (s *Store) resolveDuplicates(ctx context.Context, tx pgx.Tx, msgs []*Message, inserted []uuid.UUID) error {
	stored := make(map[uuid.UUID]bool, len(inserted))
	for _, id := range inserted {
		stored[id] = true
	}
	var orgs []uuid.UUID
	var keys []string
	for _, m := range msgs {
		if !stored[m.ID] {
			orgs, keys = append(orgs, m.OrgID), append(keys, m.DedupeKey)
		}
	}
	rows, err := tx.Query(ctx, `SELECT m.organization_id, m.dedupe_key, m.id FROM messages m
		JOIN unnest($1::uuid[], $2::text[]) AS k(organization_id, dedupe_key)
		ON m.organization_id = k.organization_id AND m.dedupe_key = k.dedupe_key`, orgs, keys)
	if err != nil {
		return fmt.Errorf("read deduplicated messages: %w", err)
	}
	type key struct {
		org uuid.UUID
		key string
	}
	existing := map[key]uuid.UUID{}
	var k key
	var id uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&k.org, &k.key, &id}, func() error { existing[k] = id; return nil }); err != nil {
		return fmt.Errorf("read deduplicated messages: %w", err)
	}
	for _, m := range msgs {
		if stored[m.ID] {
			continue
		}
		id, ok := existing[key{m.OrgID, m.DedupeKey}]
		if !ok {
			return fmt.Errorf("message %s was neither stored nor deduplicated", m.ID)
		}
		m.ID = id
	}
	return nil
}

// InsertIncoming stores an inbound message once per receiving organization and carrier message
// id and moves its thread, inside tx. A repeated delivery of the same carrier message returns
// inserted false. Its place in the thread is its creation.
func (s *Store) InsertIncoming(ctx context.Context, tx pgx.Tx, m *Message) (inserted bool, err error) {
	if m.MediaURLs == nil {
		m.MediaURLs = []string{}
	}
	tag, err := tx.Exec(ctx, `INSERT INTO messages (id, organization_id, direction, contact_phone, our_number, phone_number_id,
			body, media_urls, is_mms, provider, provider_message_id, source_kind, attributed_message_id, sentiment,
			sentiment_score, category, requires_response, opt_out_detected, keyword, created_at, thread_at)
		VALUES ($1, $2, 'incoming', $3, $4, $5, $6, $7, $8, $9, $10, 'inbound', $11, $12, $13, $14, $15, $16, $17, $18, $18)
		ON CONFLICT (organization_id, provider, provider_message_id)
			WHERE direction = 'incoming' AND provider_message_id IS NOT NULL DO NOTHING`,
		m.ID, m.OrgID, m.ContactPhone, m.OurNumber, m.PhoneNumberID, m.Body, m.MediaURLs, m.IsMMS, m.Provider,
		m.ProviderMessageID, m.AttributedTo, m.Sentiment, m.SentimentScore, m.Category, m.RequiresResponse,
		m.OptOutDetected, nullIfEmpty(m.Keyword), m.CreatedAt)
	if err != nil {
		return false, fmt.Errorf("insert incoming message: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	m.ThreadAt = m.CreatedAt
	return true, touchConversation(ctx, tx, m)
}

// conversationUpsert makes the inserted message its thread's last one (unless a later one is
// already there) and adds its unread count.
const conversationUpsert = `ON CONFLICT (organization_id, phone) DO UPDATE SET
			last_message = CASE WHEN excluded.last_message_at >= c.last_message_at THEN excluded.last_message ELSE c.last_message END,
			last_direction = CASE WHEN excluded.last_message_at >= c.last_message_at THEN excluded.last_direction ELSE c.last_direction END,
			last_message_at = greatest(c.last_message_at, excluded.last_message_at),
			unread_count = c.unread_count + excluded.unread_count,
			-- A new inbound message brings an archived thread back.
			is_archived = c.is_archived AND excluded.unread_count = 0`

// touchConversation makes an incoming message its thread's last and counts it as unread.
func touchConversation(ctx context.Context, tx pgx.Tx, m *Message) error {
	_, err := tx.Exec(ctx, `INSERT INTO conversations AS c (organization_id, phone, last_message, last_message_at, last_direction, unread_count)
		VALUES ($1, $2, $3, $4, 'incoming', 1) `+conversationUpsert,
		m.OrgID, m.ContactPhone, m.Body, m.ThreadAt)
	if err != nil {
		return fmt.Errorf("update conversation: %w", err)
	}
	return nil
}

// Message returns one message of org.
func (s *Store) Message(ctx context.Context, org, id uuid.UUID) (Message, error) {
	return scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM messages WHERE organization_id = $1 AND id = $2`, org, id))
}

// MessageForCallback finds the outgoing message a carrier callback is about: by our id when
// the callback URL carried it, else by the carrier's id.
func (s *Store) MessageForCallback(ctx context.Context, provider string, id uuid.UUID, providerMessageID string) (Message, error) {
	if id != uuid.Nil {
		return scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM messages WHERE id = $1 AND direction = 'outgoing' AND provider = $2`, id, provider))
	}
	return scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM messages WHERE provider = $1 AND provider_message_id = $2 AND direction = 'outgoing'`, provider, providerMessageID))
}

// Claim moves a queued message to sending, so one dispatcher sends it, recording when its
// throttle let it go, and makes it part of its thread as of now: a message that waited (quiet
// hours, throttle) takes its place in the conversation when it is sent, not when it was
// queued. A keyword's answer keeps the place it was given, right after the message it
// answers, so a later keyword's exchange never comes before it. created_at is left as it
// was. False means another took it, it is no longer queued, or its source is paused or
// canceled (SourceState tells).
func (s *Store) Claim(ctx context.Context, id uuid.UUID, dispatchedAt time.Time) (bool, error) {
	claimed, err := s.ClaimMany(ctx, []ClaimRequest{{ID: id, DispatchedAt: dispatchedAt}})
	if err != nil {
		return false, err
	}
	return claimed[0], nil
}

// Unclaim puts a message whose send certainly did not happen back in the queue.
func (s *Store) Unclaim(ctx context.Context, id uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET status = 'queued' WHERE id = $1 AND status = 'sending'`, id); err != nil {
		return fmt.Errorf("unclaim message: %w", err)
	}
	return nil
}

// statusRank orders statuses; a status only replaces one of lower rank, so duplicate and
// out-of-order callbacks change nothing.
const statusRank = `CASE %s WHEN 'queued' THEN 0 WHEN 'sending' THEN 1 WHEN 'sent' THEN 2 ELSE 3 END`

// StatusChange is a move of an outgoing message's status.
type StatusChange struct {
	Status            string
	ProviderMessageID string
	ErrorCode         string
	At                time.Time
	// DispatchedAt, when set, records when the throttle let the message go (a reply's).
	DispatchedAt *time.Time
}

// AdvanceStatus moves the message's status forward to c.Status inside tx and returns the
// message as it was before; changed is false when c.Status is not ahead of the current one.
// The carrier's id is recorded if the message had none (a send whose answer was lost).
func (s *Store) AdvanceStatus(ctx context.Context, tx pgx.Tx, id uuid.UUID, c StatusChange) (before Message, changed bool, err error) {
	before, err = scanMessage(tx.QueryRow(ctx, `SELECT `+messageColumns+` FROM messages WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return Message{}, false, err
	}
	tag, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE messages SET status = $2,
			provider_message_id = coalesce(provider_message_id, nullif($3, '')),
			error_code = coalesce(nullif($4, ''), error_code),
			sent_at = CASE WHEN $2 IN ('sent', 'delivered', 'undelivered') THEN coalesce(sent_at, $5) ELSE sent_at END,
			status_at = $5,
			dispatched_at = coalesce(dispatched_at, $6),
			-- A message failed after it was settled as sent is settled again (refunded).
			settled_at = CASE WHEN $2 = 'failed' THEN NULL ELSE settled_at END
		WHERE id = $1 AND %s < %s`, fmt.Sprintf(statusRank, "status"), fmt.Sprintf(statusRank, "$2::text")),
		id, c.Status, c.ProviderMessageID, c.ErrorCode, c.At, c.DispatchedAt)
	if err != nil {
		return Message{}, false, fmt.Errorf("advance message status: %w", err)
	}
	return before, tag.RowsAffected() == 1, nil
}

// StatusReport is a status a carrier reported about one of our messages.
type StatusReport struct {
	ID                                   uuid.UUID
	Status, ProviderMessageID, ErrorCode string
}

// AdvanceStatusMany is AdvanceStatus for many of provider's outgoing messages in one
// statement inside tx: each moves to its report's status if that is forward. It returns the
// messages that moved, as they were before; unknown ones and moves that are not forward are
// left out. A message reported twice takes the first report.
func (s *Store) AdvanceStatusMany(ctx context.Context, tx pgx.Tx, provider string, reports []StatusReport, at time.Time) ([]Message, error) {
	seen := make(map[uuid.UUID]bool, len(reports))
	var ids []uuid.UUID
	var statuses, pids, codes []string
	for _, r := range reports {
		if !seen[r.ID] {
			seen[r.ID] = true
			ids, statuses, pids, codes = append(ids, r.ID), append(statuses, r.Status), append(pids, r.ProviderMessageID), append(codes, r.ErrorCode)
		}
	}
	rows, err := tx.Query(ctx, fmt.Sprintf(`WITH input AS (
			SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[]) AS t(id, status, provider_message_id, error_code)
		), before AS (
			-- One probe and lock per id, in id order (see ClaimMany).
			SELECT m.id, m.status AS was, i.status, i.provider_message_id, i.error_code FROM (SELECT * FROM input ORDER BY id) i
			CROSS JOIN LATERAL (SELECT id, status FROM messages WHERE id = i.id AND direction = 'outgoing' AND provider = $5
				LIMIT 1 FOR UPDATE) m
		), moved AS (
			UPDATE messages m SET status = b.status,
				provider_message_id = coalesce(m.provider_message_id, nullif(b.provider_message_id, '')),
				error_code = coalesce(nullif(b.error_code, ''), m.error_code),
				sent_at = CASE WHEN b.status IN ('sent', 'delivered', 'undelivered') THEN coalesce(m.sent_at, $6) ELSE m.sent_at END,
				status_at = $6,
				settled_at = CASE WHEN b.status = 'failed' THEN NULL ELSE m.settled_at END
			FROM before b
			WHERE m.id = b.id AND %s < %s
			RETURNING m.id
		)
		-- The statement's snapshot has the rows as they were before it moved them.
		SELECT `+messageColumns+` FROM messages WHERE id IN (SELECT id FROM moved) ORDER BY id`,
		fmt.Sprintf(statusRank, "b.was"), fmt.Sprintf(statusRank, "b.status")),
		ids, statuses, pids, codes, provider, at)
	if err != nil {
		return nil, fmt.Errorf("advance message statuses: %w", err)
	}
	defer rows.Close()
	var moved []Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("advance message statuses: %w", err)
		}
		moved = append(moved, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("advance message statuses: %w", err)
	}
	return moved, nil
}

// LatestOutgoing returns org's latest outgoing message to phone, the one an inbound message
// from phone answers.
func (s *Store) LatestOutgoing(ctx context.Context, tx pgx.Tx, org uuid.UUID, phone string) (Message, error) {
	return scanMessage(tx.QueryRow(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE organization_id = $1 AND contact_phone = $2 AND direction = 'outgoing'
		ORDER BY thread_at DESC, id DESC LIMIT 1`, org, phone))
}

// ThreadKey is where a page of a thread ends; the next page starts after it.
type ThreadKey struct {
	At time.Time `json:"t"` // the message's ThreadAt
	ID uuid.UUID `json:"i"`
}

// shownInThread selects the messages a thread shows: neither queued nor withdrawn; $3 is
// apierr.WithdrawnCodes().
const shownInThread = `status IS DISTINCT FROM 'queued' AND NOT coalesce(status = 'failed' AND error_code = ANY($3), false)`

// Unthread takes m, a claimed message withdrawn since (it joined its thread at its claim), out
// of its conversation inside tx: when it was the conversation's last message, the thread's
// latest shown message takes its place, and a conversation left with none is removed.
func (s *Store) Unthread(ctx context.Context, tx pgx.Tx, m Message) error {
	_, err := tx.Exec(ctx, `WITH latest AS (
			SELECT body, thread_at, direction FROM messages
			WHERE organization_id = $1 AND contact_phone = $2 AND `+shownInThread+`
			ORDER BY thread_at DESC, id DESC LIMIT 1
		), moved AS (
			UPDATE conversations c SET last_message = l.body, last_message_at = l.thread_at, last_direction = l.direction
			FROM latest l WHERE c.organization_id = $1 AND c.phone = $2 AND c.last_message_at = $4
			RETURNING c.phone
		)
		DELETE FROM conversations WHERE organization_id = $1 AND phone = $2 AND last_message_at = $4
			AND NOT EXISTS (SELECT 1 FROM latest)`,
		m.OrgID, m.ContactPhone, apierr.WithdrawnCodes(), m.ThreadAt)
	if err != nil {
		return fmt.Errorf("take withdrawn message %s out of its conversation: %w", m.ID, err)
	}
	return nil
}

// Thread returns up to limit messages of org's thread with phone, latest place (ThreadAt)
// first, before after when it is set. Queued messages are not part of it until they are
// claimed, and withdrawn ones (apierr.Withdrawn: the carrier never saw them) never are: they
// were neither sent nor failed.
func (s *Store) Thread(ctx context.Context, org uuid.UUID, phone string, after *ThreadKey, limit int) ([]Message, error) {
	q := `SELECT ` + messageColumns + ` FROM messages WHERE organization_id = $1 AND contact_phone = $2 AND ` + shownInThread
	args := []any{org, phone, apierr.WithdrawnCodes()}
	if after != nil {
		q += ` AND (thread_at, id) < ($4, $5)`
		args = append(args, after.At, after.ID)
	}
	q += fmt.Sprintf(` ORDER BY thread_at DESC, id DESC LIMIT %d`, limit)
	return s.messages(ctx, "read thread", q, args...)
}

// stillOwed holds the messages a deleted contact's history keeps: those still queued or with
// the carrier, and those whose credits billing has not settled yet (the reconciler needs the
// row to debit or release them). They are deleted with a later deletion, or stay: credits are
// never stranded in a hold.
const stillOwed = `coalesce(status IN ('queued', 'sending') OR (billable AND hold_id IS NOT NULL AND settled_at IS NULL), false)`

// DeleteThread removes org's messages with phone created up to before, and the thread when
// nothing newer remains (a deleted contact's history), except the messages stillOwed keeps.
func (s *Store) DeleteThread(ctx context.Context, tx pgx.Tx, org uuid.UUID, phone string, before time.Time) error {
	if _, err := tx.Exec(ctx, `DELETE FROM short_links WHERE organization_id = $1 AND message_id IN
		(SELECT id FROM messages WHERE organization_id = $1 AND contact_phone = $2 AND created_at <= $3
			AND NOT `+stillOwed+`)`, org, phone, before); err != nil {
		return fmt.Errorf("delete short links: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM messages WHERE organization_id = $1 AND contact_phone = $2 AND created_at <= $3
			AND NOT `+stillOwed, org, phone, before); err != nil {
		return fmt.Errorf("delete messages: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM conversations WHERE organization_id = $1 AND phone = $2 AND last_message_at <= $3`, org, phone, before); err != nil {
		return fmt.Errorf("delete conversation: %w", err)
	}
	// A thread kept by newer messages counts as unread no more than the incoming messages it
	// still holds (its unread ones are its latest incoming ones).
	if _, err := tx.Exec(ctx, `UPDATE conversations SET unread_count = least(unread_count,
			(SELECT count(*) FROM messages WHERE organization_id = $1 AND contact_phone = $2 AND direction = 'incoming'))
		WHERE organization_id = $1 AND phone = $2`, org, phone); err != nil {
		return fmt.Errorf("recount unread messages: %w", err)
	}
	return nil
}

// SetHold records the billing hold a message's credits are reserved under.
func (s *Store) SetHold(ctx context.Context, id uuid.UUID, hold string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET hold_id = $2 WHERE id = $1`, id, hold); err != nil {
		return fmt.Errorf("set message hold: %w", err)
	}
	return nil
}

// IncomingSeen reports whether org already stored the carrier's inbound message sid.
func (s *Store) IncomingSeen(ctx context.Context, org uuid.UUID, provider, sid string) (bool, error) {
	var seen bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM messages WHERE organization_id = $1 AND provider = $2
		AND provider_message_id = $3 AND direction = 'incoming')`, org, provider, sid).Scan(&seen)
	if err != nil {
		return false, fmt.Errorf("check duplicate inbound: %w", err)
	}
	return seen, nil
}

// LatestConsentKeyword returns the category ("opt_out" or "opt_in") of the latest consent
// keyword org received from phone, "" when none, inside tx.
func (s *Store) LatestConsentKeyword(ctx context.Context, tx pgx.Tx, org uuid.UUID, phone string) (string, error) {
	var category string
	err := tx.QueryRow(ctx, `SELECT category FROM messages WHERE organization_id = $1 AND contact_phone = $2
		AND direction = 'incoming' AND category IN ('opt_out', 'opt_in')
		ORDER BY thread_at DESC, id DESC LIMIT 1`, org, phone).Scan(&category)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read latest consent keyword: %w", err)
	}
	return category, nil
}
