package restjson

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// page is a contacts list page as the bench's organization answers it: 50 contacts with tags.
func page() *contactsv1.ListContactsResponse {
	res := &contactsv1.ListContactsResponse{Limit: 50, HasMore: true, SortBy: "updated_at", Cursor: "eyJvIjoiMDE5MGQxZjgtMDAwMC03MDAwLTgwMDAtMDAwMDAwMDAwMGMxIn0"}
	for i := range 50 {
		res.Contacts = append(res.Contacts, &contactsv1.ContactListItem{
			Id: fmt.Sprintf("0190d1f8-0000-7000-8000-%012d", i), Phone: fmt.Sprintf("+1202555%04d", i),
			FirstName: "Ada", LastName: "Lovelace", Email: fmt.Sprintf("ada%d@example.com", i),
			OrganizationId: "0190d1f8-0000-7000-8000-0000000000aa", City: "Boston", State: "MA", Zip: "02101",
			Tags: []string{"tag1", "tag2"}, Timezone: "America/New_York", IsTextable: wrapperspb.Bool(true), IsOptedIn: true,
			CreatedAt: timestamppb.Now(), UpdatedAt: timestamppb.Now(),
		})
	}
	return res
}

func BenchmarkListPage(b *testing.B) {
	m := page()
	b.Run("restjson", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			var ok bool
			if buf, ok = Append(buf[:0], m); !ok {
				b.Fatal("not reproduced")
			}
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("restjson-wire", func(b *testing.B) {
		raw, _ := proto.Marshal(m)
		md := m.ProtoReflect().Descriptor()
		var buf []byte
		for b.Loop() {
			var ok bool
			if buf, ok = AppendWire(buf[:0], md, raw); !ok {
				b.Fatal("not reproduced")
			}
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("protojson", func(b *testing.B) {
		o := protojson.MarshalOptions{EmitUnpopulated: true}
		for b.Loop() {
			if _, err := o.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proto-unmarshal", func(b *testing.B) {
		raw, _ := proto.Marshal(m)
		for b.Loop() {
			var out contactsv1.ListContactsResponse
			if err := proto.Unmarshal(raw, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
