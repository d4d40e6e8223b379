package server

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// wireContacts are contacts of every shape an item's encoding has: optional fields set and not,
// textable true, false and unknown, no tags and several, strings long enough for a two-byte
// length, an item long enough for a three-byte one, and timestamps before 1970, at it, and on
// whole seconds.
func wireContacts() []store.Contact {
	yes, no := true, false
	phone, email := "+12025550143", "ada@example.com"
	long := strings.Repeat("é", 100)
	huge := strings.Repeat("x", 20_000)
	org := uuid.New()
	var cs []store.Contact
	for i := range 12 {
		c := store.Contact{
			ID: uuid.New(), OrganizationID: org, FirstName: "Ada", LastName: "Lovelace", Timezone: "America/New_York",
			IsOptedIn: i%2 == 0, IsStarred: i%3 == 0, IsArchived: i%4 == 0,
			CreatedAt: time.Unix(1_700_000_000+int64(i), int64(i)*1000).UTC(), UpdatedAt: time.Unix(1_800_000_000, 0).UTC(),
		}
		switch i % 3 {
		case 0:
			c.Phone, c.IsTextable, c.Tags = &phone, &yes, []string{"a", "b", long}
		case 1:
			c.Email, c.IsTextable, c.OptedOutAt = &email, &no, new(time.Unix(-86_400*365, 5).UTC())
		case 2:
			c.Address, c.City, c.State, c.Zip, c.Tags = long, "Boston", "MA", "02101", []string{""}
		}
		switch i {
		case 7:
			c.CreatedAt = time.Unix(0, 0).UTC()
		case 8:
			c.Address = huge
		case 9:
			c.FirstName, c.LastName, c.Timezone = "", "", ""
		}
		cs = append(cs, c)
	}
	return cs
}

// A page written from its rows is, byte for byte, what the codec writes for its messages, so
// every reader of the response gets the items it always got.
func TestListItemsWireIsTheMessagesEncoding(t *testing.T) {
	cs := wireContacts()
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&contactsv1.ListContactsResponse{Contacts: toListItems(cs)})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{nil, make([]byte, 0, listItemsSize(cs))} {
		got, ok := appendListItems(b, cs)
		if !ok {
			t.Fatal("appendListItems refused valid contacts")
		}
		if string(got) != string(want) {
			t.Fatalf("encodings differ:\n got %x\nwant %x", got, want)
		}
	}

	res := &contactsv1.ListContactsResponse{Limit: 12, HasMore: true, SortBy: "updated_at", Cursor: "c"}
	wire, _ := appendListItems(nil, cs)
	res.ProtoReflect().SetUnknown(wire)
	enc, err := proto.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var read contactsv1.ListContactsResponse
	if err := proto.Unmarshal(enc, &read); err != nil {
		t.Fatal(err)
	}
	full := &contactsv1.ListContactsResponse{Contacts: toListItems(cs), Limit: 12, HasMore: true, SortBy: "updated_at", Cursor: "c"}
	if !proto.Equal(full, &read) {
		t.Fatal("a client reads another page than the one the items make")
	}
}

// A contact with text that is not UTF-8 is left to the messages, whose encoding refuses it.
func TestListItemsWireRefusesInvalidText(t *testing.T) {
	cs := wireContacts()
	cs[3].Tags = []string{"ok", "a\xffb"}
	if _, ok := appendListItems(nil, cs); ok {
		t.Fatal("appendListItems wrote a tag that is not UTF-8")
	}
	cs = wireContacts()
	bad := "\xff"
	cs[5].Email = &bad
	if _, ok := appendListItems(nil, cs); ok {
		t.Fatal("appendListItems wrote an email that is not UTF-8")
	}
}
