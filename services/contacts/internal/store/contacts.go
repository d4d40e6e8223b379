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

// EventContactDeleted is the outbox event type written when a contact is deleted.
const EventContactDeleted = "contact.deleted"

// mergeAttempts bounds how often CreateOrMerge starts over after losing a race to a concurrent
// write of the same phone or email. Each lost race means the winner has committed, so the next
// attempt finds its row and merges; more than a couple of rounds only happens under a storm of
// writes that keep changing the same keys, answered as a conflict.
const mergeAttempts = 4

// errRaced means a concurrent transaction took the phone or email between our read and write.
var errRaced = errors.New("lost a race on a unique key")

// Get returns one contact with its custom fields, or ErrNotFound.
func (s *Store) Get(ctx context.Context, org, id uuid.UUID) (Contact, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+fullColumns+` FROM contacts WHERE `+orgKey+` AND id = $2`, org, id)
	c, err := pgx.CollectExactlyOneRow(rows, scanFull)
	if errors.Is(err, pgx.ErrNoRows) {
		return Contact{}, ErrNotFound
	}
	if err != nil {
		return Contact{}, fmt.Errorf("select contact: %w", err)
	}
	return c, nil
}

// CreateOrMerge inserts a contact, or merges ch into the organization's contact with the same
// phone or email (case-insensitive). It reports whether a new contact was created; a created
// contact's initial opt-in is the first entry of its consent history, with origin o. When the
// phone is new to the contact, a lookup is queued in the same transaction.
func (s *Store) CreateOrMerge(ctx context.Context, org uuid.UUID, ch Changes, q LookupQueue, o Origin) (c Contact, created bool, err error) {
	for range mergeAttempts {
		c, created, err = s.createOrMergeOnce(ctx, org, ch, q, o)
		if !errors.Is(err, errRaced) {
			return c, created, err
		}
	}
	return Contact{}, false, &DuplicateError{Field: "phone or email"}
}

// createOrMergeOnce tries the insert first: a create is most often of a new contact, and
// then the insert alone answers, as no row holds its phone or email. The insert finding one
// (or waiting for a concurrent insert of one to commit) inserts nothing, and the contacts
// holding the phone and the email are then read and merged into.
func (s *Store) createOrMergeOnce(ctx context.Context, org uuid.UUID, ch Changes, q LookupQueue, o Origin) (Contact, bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Contact{}, false, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed

	c, created, err := createOrMergeTx(ctx, tx, org, ch, q, o)
	if err != nil {
		return Contact{}, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Contact{}, false, fmt.Errorf("commit create: %w", err)
	}
	return c, created, nil
}

// createOrMergeTx is one attempt of a create inside tx: a POST's own transaction, or an
// import's batch (under a savepoint per row). The import path shares it so both keep one set
// of merge rules. A created contact's opt-in is recorded with origin o.
func createOrMergeTx(ctx context.Context, tx pgx.Tx, org uuid.UUID, ch Changes, q LookupQueue, o Origin) (Contact, bool, error) {
	c, err := insertContact(ctx, tx, org, ch.newContact())
	created, phoneChanged := err == nil, err == nil && c.Phone != nil
	if errors.Is(err, errRaced) {
		c, phoneChanged, err = mergeExisting(ctx, tx, org, ch)
	}
	if err != nil {
		return Contact{}, false, err
	}
	if created {
		if err := recordConsent(ctx, tx, org, c.ID, c.IsOptedIn, c.CreatedAt, o); err != nil {
			return Contact{}, false, err
		}
	}
	if phoneChanged && c.Phone != nil {
		if err := q.EnqueueTx(ctx, tx, org, c.ID, *c.Phone, c.UpdatedAt); err != nil {
			return Contact{}, false, err
		}
	}
	return c, created, nil
}

// mergeExisting merges ch into the organization's contact holding its phone or email, which
// an insert found. None left (it was deleted since) is errRaced: the caller starts over.
func mergeExisting(ctx context.Context, tx pgx.Tx, org uuid.UUID, ch Changes) (c Contact, phoneChanged bool, err error) {
	// A nil phone or email compares as NULL and matches nothing. The phone and the email are
	// each a probe of their unique index (as one condition, phone OR email, the planner could
	// walk the organization instead); the rows found are then locked one at a time in id order,
	// so concurrent merges lock rows they share in the same order, and rechecked once locked.
	rows, _ := tx.Query(ctx, `
		SELECT c.* FROM (
			SELECT id FROM contacts WHERE `+orgKey+` AND phone = $2
			UNION
			SELECT id FROM contacts WHERE `+orgKey+` AND lower(email) = lower($3)
			ORDER BY id
		) AS k CROSS JOIN LATERAL (
			SELECT `+fullColumns+` FROM contacts
			WHERE `+orgKey+` AND id = k.id AND (phone = $2 OR lower(email) = lower($3))
			FOR UPDATE
		) AS c`, planEach, org, ch.Phone, ch.Email)
	matches, err := pgx.CollectRows(rows, scanFull)
	if err != nil {
		return Contact{}, false, fmt.Errorf("select merge candidates: %w", err)
	}
	switch len(matches) {
	case 0:
		return Contact{}, false, errRaced
	case 1:
	default:
		return Contact{}, false, ErrAmbiguous
	}
	c = matches[0]
	before := c
	if phoneChanged, err = ch.mergeInto(&c); err != nil {
		return Contact{}, false, err
	}
	if sameContent(before, c) {
		// Nothing new (the same row sent again, a file imported twice): nothing is written,
		// so updatedAt keeps saying when the contact last changed.
		return before, false, nil
	}
	if err := updateContact(ctx, tx, &c); err != nil {
		if _, dup := uniqueViolation(err); dup {
			return Contact{}, false, errRaced
		}
		return Contact{}, false, err
	}
	return c, phoneChanged, nil
}

// insertContact inserts c with a new id. A row holding the same phone or email, or a
// concurrent insert of one (ON CONFLICT DO NOTHING waits for that transaction), makes it insert
// nothing and return errRaced.
func insertContact(ctx context.Context, tx pgx.Tx, org uuid.UUID, c Contact) (Contact, error) {
	id, err := newID()
	if err != nil {
		return Contact{}, err
	}
	c.ID, c.OrganizationID = id, org
	err = tx.QueryRow(ctx, `
		INSERT INTO contacts (id, organization_id, phone, email, first_name, last_name, address, city,
			state, zip, tags, custom_fields, timezone, is_starred, is_archived)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT DO NOTHING
		RETURNING is_opted_in, created_at, updated_at`,
		c.ID, org, c.Phone, c.Email, c.FirstName, c.LastName, c.Address, c.City, c.State, c.Zip,
		c.Tags, c.CustomFields, c.Timezone, c.IsStarred, c.IsArchived).
		Scan(&c.IsOptedIn, &c.CreatedAt, &c.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Contact{}, errRaced
	}
	if err != nil {
		return Contact{}, fmt.Errorf("insert contact: %w", err)
	}
	return c, nil
}

// updateContact writes every mutable column of c, which the caller read FOR UPDATE, and bumps
// updated_at.
func updateContact(ctx context.Context, tx pgx.Tx, c *Contact) error {
	err := tx.QueryRow(ctx, `
		UPDATE contacts SET phone = $3, email = $4, first_name = $5, last_name = $6, address = $7,
			city = $8, state = $9, zip = $10, tags = $11, custom_fields = $12, timezone = $13,
			is_starred = $14, is_archived = $15, is_textable = $16, updated_at = now()
		WHERE `+orgKey+` AND id = $2
		RETURNING updated_at`, planEach,
		c.OrganizationID, c.ID, c.Phone, c.Email, c.FirstName, c.LastName, c.Address, c.City,
		c.State, c.Zip, c.Tags, c.CustomFields, c.Timezone, c.IsStarred, c.IsArchived, c.IsTextable).
		Scan(&c.UpdatedAt)
	if err != nil {
		return fmt.Errorf("update contact: %w", err)
	}
	return nil
}

// Update applies a partial update. Tags and custom fields, when sent, replace the whole value.
// A phone or email held by another contact is a *DuplicateError; a new phone queues a lookup.
func (s *Store) Update(ctx context.Context, org, id uuid.UUID, ch Changes, q LookupQueue) (Contact, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Contact{}, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	rows, _ := tx.Query(ctx, `SELECT `+fullColumns+` FROM contacts WHERE `+orgKey+` AND id = $2 FOR UPDATE`, org, id)
	c, err := pgx.CollectExactlyOneRow(rows, scanFull)
	if errors.Is(err, pgx.ErrNoRows) {
		return Contact{}, ErrNotFound
	}
	if err != nil {
		return Contact{}, fmt.Errorf("select contact for update: %w", err)
	}
	phoneChanged := ch.replaceInto(&c)
	if err := updateContact(ctx, tx, &c); err != nil {
		if field, dup := uniqueViolation(err); dup {
			return Contact{}, &DuplicateError{Field: field}
		}
		return Contact{}, err
	}
	if phoneChanged && c.Phone != nil {
		if err := q.EnqueueTx(ctx, tx, org, c.ID, *c.Phone, c.UpdatedAt); err != nil {
			return Contact{}, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return Contact{}, fmt.Errorf("commit update: %w", err)
	}
	return c, nil
}

// Delete removes a contact and records a contact.deleted event in the outbox in the same
// transaction, so services holding data about the contact hear of it exactly when it is gone.
func (s *Store) Delete(ctx context.Context, org, id uuid.UUID) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	var (
		phone     *string
		deletedAt time.Time
	)
	err = tx.QueryRow(ctx, `DELETE FROM contacts WHERE `+orgKey+` AND id = $2 RETURNING phone, now()`, org, id).
		Scan(&phone, &deletedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete contact: %w", err)
	}
	ev := &eventsv1.ContactDeleted{OrganizationId: org.String(), ContactId: id.String(), DeletedAt: timestamppb.New(deletedAt)}
	if phone != nil {
		ev.Phone = *phone
	}
	if err := outbox.Enqueue(ctx, tx, outbox.Event{Type: EventContactDeleted, OrgID: org, Payload: ev}); err != nil {
		return fmt.Errorf("enqueue %s: %w", EventContactDeleted, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit delete: %w", err)
	}
	return nil
}
