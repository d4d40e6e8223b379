package server

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/google/uuid"
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

// toListItems converts a page of contacts. A page is tens of messages, each with its own
// timestamps, wrapper and id strings; they are made in one block of each kind instead of one
// allocation apiece, and the organization's id (the same on every item) is written once.
func toListItems(cs []store.Contact) []*contactsv1.ContactListItem {
	nStamps, nBools := 2*len(cs), 0
	for i := range cs {
		if cs[i].OptedOutAt != nil {
			nStamps++
		}
		if cs[i].IsTextable != nil {
			nBools++
		}
	}
	items := make([]contactsv1.ContactListItem, len(cs))
	stamps := make([]timestamppb.Timestamp, nStamps)
	bools := make([]wrapperspb.BoolValue, nBools)
	text := make([]byte, 0, uuidLen*len(cs))
	for i := range cs {
		text = appendUUID(text, cs[i].ID)
	}
	ids := string(text)
	out := make([]*contactsv1.ContactListItem, len(cs))
	var org uuid.UUID
	var orgID string
	stamp := func(t time.Time) *timestamppb.Timestamp {
		ts := &stamps[0]
		stamps = stamps[1:]
		ts.Seconds, ts.Nanos = t.Unix(), int32(t.Nanosecond())
		return ts
	}
	for i := range cs {
		c := &cs[i]
		if orgID == "" || c.OrganizationID != org {
			org, orgID = c.OrganizationID, c.OrganizationID.String()
		}
		it := &items[i]
		it.Id, it.OrganizationId = ids[i*uuidLen:(i+1)*uuidLen], orgID
		it.Phone, it.Email = deref(c.Phone), deref(c.Email)
		it.FirstName, it.LastName, it.Address, it.City, it.State, it.Zip = c.FirstName, c.LastName, c.Address, c.City, c.State, c.Zip
		it.Tags, it.IsOptedIn, it.Timezone, it.IsStarred, it.IsArchived = c.Tags, c.IsOptedIn, c.Timezone, c.IsStarred, c.IsArchived
		if c.IsTextable != nil {
			it.IsTextable = &bools[0]
			bools = bools[1:]
			it.IsTextable.Value = *c.IsTextable
		}
		if c.OptedOutAt != nil {
			it.OptedOutAt = stamp(*c.OptedOutAt)
		}
		it.CreatedAt, it.UpdatedAt = stamp(c.CreatedAt), stamp(c.UpdatedAt)
		out[i] = it
	}
	return out
}

const uuidLen = 36

// appendUUID writes u as uuid.UUID.String does.
func appendUUID(b []byte, u uuid.UUID) []byte {
	var s [uuidLen]byte
	hex.Encode(s[0:8], u[0:4])
	hex.Encode(s[9:13], u[4:6])
	hex.Encode(s[14:18], u[6:8])
	hex.Encode(s[19:23], u[8:10])
	hex.Encode(s[24:], u[10:])
	s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
	return append(b, s[:]...)
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
