package server

import (
	"context"

	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// CreateContact creates a contact, or merges into the one with the same phone or email:
// 201 "created" or 200 "merged".
func (s *Server) CreateContact(ctx context.Context, req *contactsv1.CreateContactRequest) (*contactsv1.CreateContactResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	v := newValidator()
	ch := v.created(createFields{
		Phone: req.Phone, Email: req.Email, FirstName: req.FirstName, LastName: req.LastName,
		Address: req.Address, City: req.City, State: req.State, Zip: req.Zip, Timezone: req.Timezone,
	})
	ch.Tags, ch.CustomFields = v.tags("tags", req.GetTags()), v.customFields(req.GetCustomFields())
	if err := v.err(); err != nil {
		return nil, err
	}
	p, _ := tenant.FromContext(ctx)
	c, created, err := s.store.CreateOrMerge(ctx, org, ch, s.lookups, store.Origin{Source: store.SourceAPI, User: p.User})
	if err != nil {
		return nil, storeError(err, "contact")
	}
	if created {
		httpcode.Set(ctx, 201)
	} else {
		httpcode.Set(ctx, 200)
	}
	return &contactsv1.CreateContactResponse{Contact: toCreated(c, created)}, nil
}

// createFields are the single-valued fields of a create: a request's or an import row's (nil:
// not sent).
type createFields struct {
	Phone, Email, FirstName, LastName, Address, City, State, Zip, Timezone *string
}

// created validates a create's single-valued fields, the rules a POST and an import share.
func (v *validator) created(f createFields) store.Changes {
	return store.Changes{
		Phone: v.phone(f.Phone, false), Email: v.email(f.Email, false),
		FirstName: v.text("firstName", f.FirstName, maxNameLen), LastName: v.text("lastName", f.LastName, maxNameLen),
		Address: v.text("address", f.Address, maxAddressLen), City: v.text("city", f.City, maxNameLen),
		State: v.state(f.State), Zip: v.zip("zip", f.Zip), Timezone: v.timezone(f.Timezone),
	}
}

// GetContact returns one contact with its custom fields.
func (s *Server) GetContact(ctx context.Context, req *contactsv1.GetContactRequest) (*contactsv1.GetContactResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetId(), "contact")
	if err != nil {
		return nil, err
	}
	c, err := s.store.Get(ctx, org, id)
	if err != nil {
		return nil, storeError(err, "contact")
	}
	pc, err := toContact(c)
	if err != nil {
		return nil, err
	}
	return &contactsv1.GetContactResponse{Contact: pc}, nil
}

// UpdateContact changes the sent fields only; tags and customFields replace the whole value.
func (s *Server) UpdateContact(ctx context.Context, req *contactsv1.UpdateContactRequest) (*contactsv1.UpdateContactResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetId(), "contact")
	if err != nil {
		return nil, err
	}
	v := newValidator()
	ch := store.Changes{
		Phone: v.phone(req.Phone, true), Email: v.email(req.Email, true),
		FirstName: v.text("firstName", req.FirstName, maxNameLen), LastName: v.text("lastName", req.LastName, maxNameLen),
		Address: v.text("address", req.Address, maxAddressLen), City: v.text("city", req.City, maxNameLen),
		State: v.state(req.State), Zip: v.zip("zip", req.Zip), Timezone: v.timezone(req.Timezone),
		Tags: v.tagList(req.GetTags()), CustomFields: v.customFields(req.GetCustomFields()),
		IsStarred: req.IsStarred, IsArchived: req.IsArchived,
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	c, err := s.store.Update(ctx, org, id, ch, s.lookups)
	if err != nil {
		return nil, storeError(err, "contact")
	}
	pc, err := toContact(c)
	if err != nil {
		return nil, err
	}
	return &contactsv1.UpdateContactResponse{Contact: pc}, nil
}

// DeleteContact removes a contact; the contact.deleted event tells other services to drop
// their data about it.
func (s *Server) DeleteContact(ctx context.Context, req *contactsv1.DeleteContactRequest) (*contactsv1.DeleteContactResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetId(), "contact")
	if err != nil {
		return nil, err
	}
	if err := s.store.Delete(ctx, org, id); err != nil {
		return nil, storeError(err, "contact")
	}
	return &contactsv1.DeleteContactResponse{Id: id.String(), Deleted: true}, nil
}
