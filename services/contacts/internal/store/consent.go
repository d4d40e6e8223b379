package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
)

// EventContactConsentChanged is the outbox event type written when a contact opts out or in.
const EventContactConsentChanged = "contact.consent_changed"

// GetByPhone returns the contact with an E.164 phone, with its custom fields, or ErrNotFound.
func (s *Store) GetByPhone(ctx context.Context, org uuid.UUID, phone string) (Contact, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+fullColumns+` FROM contacts WHERE `+orgKey+` AND phone = $2`, org, phone)
	c, err := pgx.CollectExactlyOneRow(rows, scanFull)
	if errors.Is(err, pgx.ErrNoRows) {
		return Contact{}, ErrNotFound
	}
	if err != nil {
		return Contact{}, fmt.Errorf("select contact by phone: %w", err)
	}
	return c, nil
}

// MarkTextable records that the contact with phone sent an inbound message, which proves the
// number receives texts whatever a lookup said. It returns the contact's id, or ErrNotFound;
// a contact already textable is left untouched, so repeating it changes nothing. The update
// finds its row by the id the lock read, not by a join with it, which the planner could run as
// a walk of the organization.
func (s *Store) MarkTextable(ctx context.Context, org uuid.UUID, phone string) (uuid.UUID, error) {
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `
		WITH target AS (
			SELECT id, is_textable FROM contacts WHERE `+orgKey+` AND phone = $2 FOR UPDATE
		), marked AS (
			UPDATE contacts SET is_textable = true, updated_at = now()
			WHERE `+orgKey+` AND id = (SELECT id FROM target WHERE is_textable IS NOT TRUE)
		)
		SELECT id FROM target`, org, phone).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, ErrNotFound
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("mark contact textable: %w", err)
	}
	return id, nil
}

// ConsentChange is one opt-out or opt-in of the contact with Phone (or, when ContactID is
// set, of the contact with that id).
type ConsentChange struct {
	Phone      string    // E.164
	ContactID  uuid.UUID // uuid.Nil: find the contact by Phone
	OptedIn    bool
	OccurredAt time.Time // when it happened
	Origin     Origin    // what caused it: recorded in the history, its label on the event
	// A sign-up (opt-ins only): tags merged into the contact as a create merges them, and
	// whether an unknown phone gets a contact (opted in, with the tags) instead of nothing.
	AddTags         []string
	CreateIfMissing bool
}

// Consent is a contact's consent after SetConsent.
type Consent struct {
	Found     bool // false only for an opt-in of an unknown phone
	ContactID uuid.UUID
	IsOptedIn bool
	Changed   bool // is_opted_in flipped, or the opt-out or sign-up created the contact
}

// SetConsent applies ch to the contact with its phone. An opt-out keeps the earliest opt-out
// time; an opt-out of a phone no contact has creates a minimal opted-out contact so the number
// stays suppressed (a later create merges into it and keeps its consent). An opt-in of an
// unknown phone changes nothing, unless it is a sign-up (CreateIfMissing), which creates the
// contact opted in with its tags; a sign-up's tags are merged into a contact that exists by
// the create's merge rules (a *LimitError past MaxTags, nothing written). A change is recorded
// in the contact's consent history and writes a contact.consent_changed event, both in the
// same transaction; a new contact's phone lookup is queued in it too. A change by ContactID
// of a contact the organization does not have is ErrNotFound.
func (s *Store) SetConsent(ctx context.Context, org uuid.UUID, ch ConsentChange, q LookupQueue) (Consent, error) {
	for range mergeAttempts {
		res, err := s.setConsentOnce(ctx, org, ch, q)
		if !errors.Is(err, errRaced) {
			return res, err
		}
	}
	return Consent{}, fmt.Errorf("set consent: %w", errRaced)
}

func (s *Store) setConsentOnce(ctx context.Context, org uuid.UUID, ch ConsentChange, q LookupQueue) (Consent, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Consent{}, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed

	res := Consent{Found: true}
	var (
		wasOptedIn bool
		phone      *string
	)
	key, arg := "phone = $2", any(ch.Phone)
	if ch.ContactID != uuid.Nil {
		key, arg = "id = $2", ch.ContactID
	}
	err = tx.QueryRow(ctx, `SELECT id, phone, is_opted_in FROM contacts WHERE `+orgKey+` AND `+key+` FOR UPDATE`,
		org, arg).Scan(&res.ContactID, &phone, &wasOptedIn)
	switch {
	case errors.Is(err, pgx.ErrNoRows) && ch.ContactID != uuid.Nil:
		return Consent{}, ErrNotFound
	case errors.Is(err, pgx.ErrNoRows) && ch.OptedIn && !ch.CreateIfMissing:
		return Consent{}, nil
	case errors.Is(err, pgx.ErrNoRows) && ch.OptedIn:
		if res.ContactID, err = insertSignedUp(ctx, tx, org, ch, q); err != nil {
			return Consent{}, err
		}
		phone = &ch.Phone
		res.Changed = true
	case errors.Is(err, pgx.ErrNoRows):
		if res.ContactID, err = insertOptedOut(ctx, tx, org, ch, q); err != nil {
			return Consent{}, err
		}
		phone = &ch.Phone
		res.Changed = true
	case err != nil:
		return Consent{}, fmt.Errorf("select contact for consent: %w", err)
	default:
		if err := addTags(ctx, tx, org, res.ContactID, ch); err != nil {
			return Consent{}, err
		}
		if err := updateConsent(ctx, tx, org, res.ContactID, ch); err != nil {
			return Consent{}, err
		}
		res.Changed = wasOptedIn != ch.OptedIn
	}
	res.IsOptedIn = ch.OptedIn
	if res.Changed {
		if err := recordConsent(ctx, tx, org, res.ContactID, ch.OptedIn, ch.OccurredAt, ch.Origin); err != nil {
			return Consent{}, err
		}
		ev := &eventsv1.ContactConsentChanged{
			OrganizationId: org.String(), ContactId: res.ContactID.String(), Phone: deref(phone),
			IsOptedIn: ch.OptedIn, OccurredAt: timestamppb.New(ch.OccurredAt), Source: ch.Origin.Label(),
		}
		if err := outbox.Enqueue(ctx, tx, outbox.Event{Type: EventContactConsentChanged, OrgID: org, Payload: ev}); err != nil {
			return Consent{}, fmt.Errorf("enqueue %s: %w", EventContactConsentChanged, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return Consent{}, fmt.Errorf("commit consent: %w", err)
	}
	return res, nil
}

// insertOptedOut creates the minimal contact an opt-out of an unknown phone leaves behind and
// queues its phone lookup. A concurrent insert of the phone is errRaced, as in insertContact.
func insertOptedOut(ctx context.Context, tx pgx.Tx, org uuid.UUID, ch ConsentChange, q LookupQueue) (uuid.UUID, error) {
	id, err := newID()
	if err != nil {
		return uuid.Nil, err
	}
	var updatedAt time.Time
	err = tx.QueryRow(ctx, `
		INSERT INTO contacts (id, organization_id, phone, is_opted_in, opted_out_at)
		VALUES ($1, $2, $3, false, $4)
		ON CONFLICT DO NOTHING
		RETURNING updated_at`, id, org, ch.Phone, ch.OccurredAt).Scan(&updatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, errRaced
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("insert opted-out contact: %w", err)
	}
	if err := q.EnqueueTx(ctx, tx, org, id, ch.Phone, updatedAt); err != nil {
		return uuid.Nil, err
	}
	return id, nil
}

// insertSignedUp creates the contact a sign-up of an unknown phone makes, as a create with the
// phone and the tags would (opted in, lookup queued). A concurrent insert of the phone is
// errRaced: the next attempt finds the contact and merges the tags into it.
func insertSignedUp(ctx context.Context, tx pgx.Tx, org uuid.UUID, ch ConsentChange, q LookupQueue) (uuid.UUID, error) {
	c, err := insertContact(ctx, tx, org, Changes{Phone: &ch.Phone, Tags: ch.AddTags}.newContact())
	if err != nil {
		return uuid.Nil, err
	}
	if err := q.EnqueueTx(ctx, tx, org, c.ID, ch.Phone, c.UpdatedAt); err != nil {
		return uuid.Nil, err
	}
	return c.ID, nil
}

// addTags merges a sign-up's tags into the contact id, read FOR UPDATE, by the create's merge
// rules (union, existing order first, MaxTags); the limit names the request's addTags.
func addTags(ctx context.Context, tx pgx.Tx, org, id uuid.UUID, ch ConsentChange) error {
	if !ch.OptedIn || len(ch.AddTags) == 0 {
		return nil
	}
	rows, _ := tx.Query(ctx, `SELECT `+fullColumns+` FROM contacts WHERE `+orgKey+` AND id = $2`, org, id)
	c, err := pgx.CollectExactlyOneRow(rows, scanFull)
	if err != nil {
		return fmt.Errorf("select contact for tags: %w", err)
	}
	before := c
	var over *LimitError
	if _, err := (Changes{Tags: ch.AddTags}).mergeInto(&c); errors.As(err, &over) {
		for i := range over.Over {
			over.Over[i].Field = "addTags"
		}
		return over
	} else if err != nil {
		return err
	}
	if sameContent(before, c) {
		return nil
	}
	return updateContact(ctx, tx, &c)
}

// updateConsent writes ch to a contact read FOR UPDATE. An opt-out keeps an earlier opt-out
// time; updated_at moves only when a column does.
func updateConsent(ctx context.Context, tx pgx.Tx, org, id uuid.UUID, ch ConsentChange) error {
	var err error
	if ch.OptedIn {
		_, err = tx.Exec(ctx, `
			UPDATE contacts SET is_opted_in = true, opted_out_at = NULL, updated_at = now()
			WHERE `+orgKey+` AND id = $2 AND NOT is_opted_in`, org, id)
	} else {
		_, err = tx.Exec(ctx, `
			UPDATE contacts SET is_opted_in = false, updated_at = now(),
				opted_out_at = CASE WHEN is_opted_in THEN $3 ELSE least(opted_out_at, $3) END
			WHERE `+orgKey+` AND id = $2
				AND (is_opted_in OR opted_out_at IS NULL OR opted_out_at > $3)`, org, id, ch.OccurredAt)
	}
	if err != nil {
		return fmt.Errorf("update consent: %w", err)
	}
	return nil
}

// Sendability is what CheckSendable needs of the contact with a phone.
type Sendability struct {
	ContactID  uuid.UUID
	IsOptedIn  bool
	IsTextable *bool // nil while the lookup is pending
	FirstName  string
	LastName   string
}

// SendabilityByPhone returns, keyed by E.164 phone, the contacts that have one of phones; a
// phone no contact has is absent. One query that probes the (organization_id, phone) index once
// per phone (the LIMIT keeps each a probe): as phone = ANY($2), a custom plan could take only
// the organization as the index's condition and filter all of its contacts.
func (s *Store) SendabilityByPhone(ctx context.Context, org uuid.UUID, phones []string) (map[string]Sendability, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT k.phone, c.id, c.is_opted_in, c.is_textable, c.first_name, c.last_name
		FROM unnest($2::text[]) AS k(phone)
		CROSS JOIN LATERAL (SELECT id, is_opted_in, is_textable, first_name, last_name FROM contacts
			WHERE `+orgKey+` AND phone = k.phone LIMIT 1) AS c`, org, phones)
	if err != nil {
		return nil, fmt.Errorf("select sendability: %w", err)
	}
	out := make(map[string]Sendability, len(phones))
	var (
		phone string
		sb    Sendability
	)
	_, err = pgx.ForEachRow(rows, []any{&phone, &sb.ContactID, &sb.IsOptedIn, &sb.IsTextable, &sb.FirstName, &sb.LastName}, func() error {
		out[phone] = sb
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read sendability: %w", err)
	}
	return out, nil
}
