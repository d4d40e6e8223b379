// Package resource is what the gRPC servers of an organization's records of one kind (a
// campaign, a poll) share: the id a path names, the 404 a missing or malformed one is, the
// refusal of a state move, and the List and Get RPCs of the calling organization.
package resource

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
)

// Kind is one kind of record as the API names it.
type Kind struct {
	// Name is the record's name in messages: "campaign".
	Name string
	// Reason is the error code of its 404 (apierr.ReasonNotFound or one of its own).
	Reason string
	// Missing is the store's error for a record the organization does not have.
	Missing error
}

// NotFound is the 404 of a missing or foreign record.
func (k Kind) NotFound() error {
	return apierr.New(codes.NotFound, k.Reason, k.Name+" not found")
}

// ID parses the record id of a path; a malformed one is a missing record.
func (k Kind) ID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, k.NotFound()
	}
	return id, nil
}

// StoreError maps the store's Missing to the 404; other errors pass through to be masked.
func (k Kind) StoreError(err error) error {
	if errors.Is(err, k.Missing) {
		return k.NotFound()
	}
	return err
}

// Target is the organization (write access required) and the record id of a write.
func (k Kind) Target(ctx context.Context, rawID string) (org, id uuid.UUID, err error) {
	if org, err = tenant.RequireWrite(ctx); err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	id, err = k.ID(rawID)
	return org, id, err
}

// InvalidMove refuses a state move (verb) the record's status does not allow.
func (k Kind) InvalidMove(verb, status string) error {
	return apierr.New(codes.Aborted, apierr.ReasonInvalidState, "a "+status+" "+k.Name+" cannot "+verb)
}

// Get reads the calling organization's record rawID with get.
func Get[R any](ctx context.Context, k Kind, rawID string, get func(ctx context.Context, org, id uuid.UUID) (R, error)) (R, error) {
	var none R
	org, err := tenant.Org(ctx)
	if err != nil {
		return none, err
	}
	id, err := k.ID(rawID)
	if err != nil {
		return none, err
	}
	r, err := get(ctx, org, id)
	if err != nil {
		return none, k.StoreError(err)
	}
	return r, nil
}

// List reads the calling organization's records with list and converts each with to.
func List[R, P any](ctx context.Context, list func(ctx context.Context, org uuid.UUID) ([]R, error), to func(*R) P) ([]P, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	rs, err := list(ctx, org)
	if err != nil {
		return nil, err
	}
	out := make([]P, len(rs))
	for i := range rs {
		out[i] = to(&rs[i])
	}
	return out, nil
}
