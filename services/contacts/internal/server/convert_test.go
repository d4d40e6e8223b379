package server

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// toListItems gives each contact the item a field-by-field conversion gives it.
func TestListItemsAreEachContact(t *testing.T) {
	yes, no := true, false
	phone, email := "+12025550143", "ada@example.com"
	opted := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)
	orgA, orgB := uuid.New(), uuid.New()
	var cs []store.Contact
	for i := range 7 {
		c := store.Contact{
			ID: uuid.New(), OrganizationID: orgA, FirstName: "Ada", LastName: "Lovelace", City: "Boston", State: "MA",
			Zip: "02101", Tags: []string{"a", "b"}, IsOptedIn: i%2 == 0, Timezone: "America/New_York", IsStarred: i == 3,
			CreatedAt: time.Unix(1_700_000_000+int64(i), int64(i)*1000).UTC(), UpdatedAt: time.Unix(1_800_000_000, 999).UTC(),
		}
		switch i % 3 {
		case 0:
			c.Phone, c.IsTextable = &phone, &yes
		case 1:
			c.Email, c.IsTextable, c.OptedOutAt = &email, &no, &opted
		}
		if i == 5 {
			c.OrganizationID = orgB
		}
		cs = append(cs, c)
	}
	got := toListItems(cs)
	if len(got) != len(cs) {
		t.Fatalf("%d items for %d contacts", len(got), len(cs))
	}
	for i, c := range cs {
		want := &contactsv1.ContactListItem{
			Id: c.ID.String(), OrganizationId: c.OrganizationID.String(),
			Phone: deref(c.Phone), Email: deref(c.Email),
			FirstName: c.FirstName, LastName: c.LastName, Address: c.Address, City: c.City, State: c.State, Zip: c.Zip,
			Tags: c.Tags, IsOptedIn: c.IsOptedIn, Timezone: c.Timezone, IsStarred: c.IsStarred, IsArchived: c.IsArchived,
			CreatedAt: timestamppb.New(c.CreatedAt), UpdatedAt: timestamppb.New(c.UpdatedAt),
		}
		if c.IsTextable != nil {
			want.IsTextable = wrapperspb.Bool(*c.IsTextable)
		}
		if c.OptedOutAt != nil {
			want.OptedOutAt = timestamppb.New(*c.OptedOutAt)
		}
		if !proto.Equal(want, got[i]) {
			t.Errorf("contact %d:\n got %v\nwant %v", i, got[i], want)
		}
	}
	if len(toListItems(nil)) != 0 {
		t.Error("items for no contacts")
	}
}
