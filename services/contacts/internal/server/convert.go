package server

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

func toContact(c store.Contact) (*contactsv1.Contact, error) {
	fields, err := structpb.NewStruct(c.CustomFields)
	if err != nil {
		return nil, fmt.Errorf("custom fields of contact %s: %w", c.ID, err)
	}
	return &contactsv1.Contact{
		Id: c.ID.String(), OrganizationId: c.OrganizationID.String(),
		Phone: deref(c.Phone), Email: deref(c.Email),
		FirstName: c.FirstName, LastName: c.LastName, Address: c.Address, City: c.City, State: c.State, Zip: c.Zip,
		Tags: c.Tags, CustomFields: fields, IsTextable: optBool(c.IsTextable), IsOptedIn: c.IsOptedIn,
		OptedOutAt: optTime(c.OptedOutAt), Timezone: c.Timezone, IsStarred: c.IsStarred, IsArchived: c.IsArchived,
		CreatedAt: timestamppb.New(c.CreatedAt), UpdatedAt: timestamppb.New(c.UpdatedAt),
	}, nil
}

func toListItem(c store.Contact) *contactsv1.ContactListItem {
	return &contactsv1.ContactListItem{
		Id: c.ID.String(), OrganizationId: c.OrganizationID.String(),
		Phone: deref(c.Phone), Email: deref(c.Email),
		FirstName: c.FirstName, LastName: c.LastName, Address: c.Address, City: c.City, State: c.State, Zip: c.Zip,
		Tags: c.Tags, IsTextable: optBool(c.IsTextable), IsOptedIn: c.IsOptedIn,
		OptedOutAt: optTime(c.OptedOutAt), Timezone: c.Timezone, IsStarred: c.IsStarred, IsArchived: c.IsArchived,
		CreatedAt: timestamppb.New(c.CreatedAt), UpdatedAt: timestamppb.New(c.UpdatedAt),
	}
}

func toCreated(c store.Contact, created bool) *contactsv1.CreatedContact {
	outcome := "merged"
	if created {
		outcome = "created"
	}
	return &contactsv1.CreatedContact{
		Id: c.ID.String(), OrganizationId: c.OrganizationID.String(), Phone: deref(c.Phone),
		FirstName: c.FirstName, LastName: c.LastName, Email: deref(c.Email), Tags: c.Tags,
		IsTextable: optBool(c.IsTextable), IsOptedIn: c.IsOptedIn,
		CreatedAt: timestamppb.New(c.CreatedAt), UpdatedAt: timestamppb.New(c.UpdatedAt), Outcome: outcome,
	}
}

func toSegment(s store.Segment) *contactsv1.Segment {
	f := s.Filter
	return &contactsv1.Segment{
		Id: s.ID.String(), OrganizationId: s.OrganizationID.String(), Name: s.Name,
		Filter: &contactsv1.ContactFilter{
			Search: f.Search, Tags: f.Tags, TagsLogic: f.TagsLogic, IsTextable: optBool(f.IsTextable),
			OptedOut: optBool(f.OptedOut), HasEmail: optBool(f.HasEmail), HasPhone: optBool(f.HasPhone),
			States: f.States, Zip: f.Zip,
		},
		CreatedAt: timestamppb.New(s.CreatedAt), UpdatedAt: timestamppb.New(s.UpdatedAt),
	}
}

// deref is a text column as the API gives it: "" when NULL. A field the spec types as a string
// is never null.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func optBool(p *bool) *wrapperspb.BoolValue {
	if p == nil {
		return nil
	}
	return wrapperspb.Bool(*p)
}

func optTime(p *time.Time) *timestamppb.Timestamp {
	if p == nil {
		return nil
	}
	return timestamppb.New(*p)
}
