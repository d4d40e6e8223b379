package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Consent sources: what caused a change of a contact's opt-in, the kind part of a source
// ("keyword:STOP" is kind keyword, detail STOP).
const (
	SourceAPI     = "api"     // a user through the API: a contact's creation, an opt-out
	SourceImport  = "import"  // a contact an import created
	SourceKeyword = "keyword" // STOP, START... texted by the phone's owner
	SourceText    = "text"    // an opt-out in words ("please stop texting me")
	SourceCarrier = "carrier" // the carrier says the recipient unsubscribed (Twilio 21610)
	SourceSignup  = "signup"  // a sign-up keyword texted by the phone's owner
)

// Sources lists every consent source kind.
var Sources = []string{SourceAPI, SourceImport, SourceKeyword, SourceText, SourceCarrier, SourceSignup}

// Origin is what caused a consent change: recorded with it in the contact's history, as
// evidence of who gave or took back consent.
type Origin struct {
	Source      string // one of Sources
	Detail      string // the keyword, the rule, the carrier's error code, a note
	MessageID   string // the inbound message that made it
	MessageText string
	User        string     // the API caller's subject
	ImportID    *uuid.UUID // the import that created the contact
}

// ParseSource reads a "<kind>:<detail>" source ("keyword:STOP", "carrier:21610"); a source
// without ':' is a kind alone.
func ParseSource(s string) Origin {
	kind, detail, _ := strings.Cut(s, ":")
	return Origin{Source: kind, Detail: detail}
}

// Label is the origin as the contact.consent_changed event names it: "<kind>:<detail>", or
// the kind alone without detail.
func (o Origin) Label() string {
	if o.Detail == "" {
		return o.Source
	}
	return o.Source + ":" + o.Detail
}

// recordConsent writes one entry of a contact's consent history in tx, the transaction that
// changed is_opted_in; recorded_at is taken now, after the contact's row lock.
func recordConsent(ctx context.Context, tx pgx.Tx, org, contact uuid.UUID, optedIn bool, at time.Time, o Origin) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO consent_events (organization_id, contact_id, occurred_at, opted_in, source, detail,
			message_id, message_text, user_subject, import_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		org, contact, at, optedIn, o.Source, o.Detail, nilIfEmpty(o.MessageID), nilIfEmpty(o.MessageText),
		nilIfEmpty(o.User), o.ImportID)
	if err != nil {
		return fmt.Errorf("record consent change: %w", err)
	}
	return nil
}

// ConsentEntry is one change of a contact's opt-in.
type ConsentEntry struct {
	ID         uuid.UUID
	ContactID  uuid.UUID
	Phone      *string // the contact's phone now (export only)
	OccurredAt time.Time
	RecordedAt time.Time
	OptedIn    bool
	Origin
}

// HistoryKey is a position in a contact's history: the recorded time and id of an entry.
type HistoryKey struct {
	At time.Time
	ID uuid.UUID
}

// historyColumns are read by both history queries (as e.*) from consent_events.
const historyColumns = `e.id, e.contact_id, e.occurred_at, e.recorded_at, e.opted_in, e.source, e.detail,
	coalesce(e.message_id, ''), coalesce(e.message_text, ''), coalesce(e.user_subject, ''), e.import_id`

// importedColumns are historyColumns' counterparts (as c.*) for the first entry of a contact an
// import's batch inserted, which has no consent_events row but its import_id (see
// insertFresh): its id is the contact's, and it occurred and was recorded when the contact was
// created, opted in (a contact is created opted in), with the import's id.
const importedColumns = `c.id, c.id, c.created_at, c.created_at, true, '` + SourceImport + `', '', '', '', '', c.import_id`

func historyFields(dst []any, e *ConsentEntry) []any {
	return append(dst, &e.ID, &e.ContactID, &e.OccurredAt, &e.RecordedAt, &e.OptedIn, &e.Source, &e.Detail,
		&e.MessageID, &e.MessageText, &e.User, &e.ImportID)
}

// ConsentHistory returns up to limit entries of the contact's history, newest (last applied)
// first, after the entry before when it is set, and whether more follow. A contact the
// organization does not have is ErrNotFound.
//
// The history is the contact's consent_events and, for a contact an import's batch inserted,
// its creation entry read from the contact's row (importedColumns), each part read in the
// page's order up to the page's size and the two merged. The contact's row is a probe of its
// key.
func (s *Store) ConsentHistory(ctx context.Context, org, contact uuid.UUID, before *HistoryKey, limit int) ([]ConsentEntry, bool, error) {
	var exists bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM contacts WHERE `+orgKey+` AND id = $2)`, org, contact).Scan(&exists)
	if err != nil {
		return nil, false, fmt.Errorf("find contact: %w", err)
	}
	if !exists {
		return nil, false, ErrNotFound
	}
	at, id := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), uuid.Max
	if before != nil {
		at, id = before.At, before.ID
	}
	out, err := collectInIndexOrder(ctx, s.inOrder, `
		(SELECT `+historyColumns+` FROM consent_events e
		WHERE e.organization_id = (SELECT $1::uuid) AND e.contact_id = $2 AND (e.recorded_at, e.id) < ($3, $4)
		ORDER BY e.recorded_at DESC, e.id DESC
		LIMIT $5)
		UNION ALL
		(SELECT `+importedColumns+` FROM contacts c
		WHERE c.organization_id = (SELECT $1::uuid) AND c.id = $2 AND c.import_id IS NOT NULL
			AND (c.created_at, c.id) < ($3, $4))
		ORDER BY recorded_at DESC, id DESC
		LIMIT $5`, []any{org, contact, at, id, limit + 1}, limit+1, historyFields)
	if err != nil {
		return nil, false, fmt.Errorf("select consent history: %w", err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// defaultExportBatch is how many entries ExportConsent reads per query.
const defaultExportBatch = 1000

// ExportConsent calls each for every entry of the organization's consent history that occurred
// in [from, to), oldest first, with its contact's phone, reading it in keyset batches. An
// error from each stops the walk and is returned.
//
// A batch is the next entries of consent_events and the next creation entries of contacts an
// import's batch inserted (importedColumns, by contacts_org_created), each part read in order
// up to the batch's size and the two merged; the next batch starts after the last entry of the
// merge, whichever part it came from.
func (s *Store) ExportConsent(ctx context.Context, org uuid.UUID, from, to time.Time, each func(ConsentEntry) error) error {
	after := HistoryKey{At: from, ID: uuid.Nil}
	for {
		// The phone of an event is a probe of the contacts' key per entry (the LIMIT keeps it
		// one: a join could read the organization's contacts whole).
		batch, err := collectInIndexOrder(ctx, s.inOrder, `
			(SELECT `+historyColumns+`, c.phone FROM consent_events e
			CROSS JOIN LATERAL (SELECT phone FROM contacts
				WHERE organization_id = e.organization_id AND id = e.contact_id LIMIT 1) AS c
			WHERE e.organization_id = (SELECT $1::uuid) AND (e.occurred_at, e.id) > ($2, $3) AND e.occurred_at < $4
			ORDER BY e.occurred_at, e.id
			LIMIT $5)
			UNION ALL
			(SELECT `+importedColumns+`, c.phone FROM contacts c
			WHERE c.organization_id = (SELECT $1::uuid) AND c.import_id IS NOT NULL
				AND (c.created_at, c.id) > ($2, $3) AND c.created_at < $4
			ORDER BY c.created_at, c.id
			LIMIT $5)
			ORDER BY occurred_at, id
			LIMIT $5`, []any{org, after.At, after.ID, to, s.exportBatch}, s.exportBatch,
			func(dst []any, e *ConsentEntry) []any { return append(historyFields(dst, e), &e.Phone) })
		if err != nil {
			return fmt.Errorf("select consent export: %w", err)
		}
		for _, e := range batch {
			if err := each(e); err != nil {
				return err
			}
		}
		if len(batch) < s.exportBatch {
			return nil
		}
		last := batch[len(batch)-1]
		after = HistoryKey{At: last.OccurredAt, ID: last.ID}
	}
}
