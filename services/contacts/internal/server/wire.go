package server

import (
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// A list page's items are written in their encoding straight from the rows: made into messages
// first (toListItems), a page was fifty messages with their timestamps, wrappers and id
// strings, built only for the codec to size and encode them and then dropped. The encoding
// travels as the response's unknown fields, which proto.Marshal writes as they are after the
// response's own fields; a reader of the response (the gateway, any client) decodes the
// repeated field wherever it comes, as protobuf requires, and finds the items toListItems
// would have given.

// Field numbers of ListContactsResponse and ContactListItem (contacts/v1/contacts.proto), and
// of the well-known types an item holds.
const (
	listContactsField = 1

	itemID             = 1
	itemOrganizationID = 2
	itemFirstName      = 5
	itemLastName       = 6
	itemAddress        = 7
	itemCity           = 8
	itemState          = 9
	itemZip            = 10
	itemTags           = 11
	itemIsTextable     = 13
	itemIsOptedIn      = 14
	itemOptedOutAt     = 15
	itemTimezone       = 16
	itemIsStarred      = 17
	itemIsArchived     = 18
	itemCreatedAt      = 19
	itemUpdatedAt      = 20
	itemPhone          = 21
	itemEmail          = 22

	timestampSeconds = 1
	timestampNanos   = 2
	boolValue        = 1
)

// appendListItems appends the encoding of the contacts field of a ListContactsResponse holding
// toListItems(cs): the bytes proto.Marshal writes for it, items in field-number order and zero
// values left out. It reports false for a contact with a string that is not UTF-8, which
// proto.Marshal refuses; the caller then answers with toListItems, so such a page fails as it
// always did.
func appendListItems(b []byte, cs []store.Contact) ([]byte, bool) {
	for i := range cs {
		c := &cs[i]
		if !validText(c) {
			return b, false
		}
		b = protowire.AppendTag(b, listContactsField, protowire.BytesType)
		// The item's length comes before it; it is written once the item is, in a varint of
		// the smallest size, the item moved up if it needs more than a byte.
		at := len(b)
		b = append(b, 0)
		b = appendUUIDField(b, itemID, c.ID)
		b = appendUUIDField(b, itemOrganizationID, c.OrganizationID)
		b = appendString(b, itemFirstName, c.FirstName)
		b = appendString(b, itemLastName, c.LastName)
		b = appendString(b, itemAddress, c.Address)
		b = appendString(b, itemCity, c.City)
		b = appendString(b, itemState, c.State)
		b = appendString(b, itemZip, c.Zip)
		for _, t := range c.Tags {
			b = protowire.AppendTag(b, itemTags, protowire.BytesType)
			b = protowire.AppendString(b, t)
		}
		if c.IsTextable != nil {
			b = protowire.AppendTag(b, itemIsTextable, protowire.BytesType)
			if *c.IsTextable {
				b = append(b, 2)
				b = appendBool(b, boolValue, true)
			} else {
				b = append(b, 0)
			}
		}
		b = appendBool(b, itemIsOptedIn, c.IsOptedIn)
		if c.OptedOutAt != nil {
			b = appendTimestamp(b, itemOptedOutAt, *c.OptedOutAt)
		}
		b = appendString(b, itemTimezone, c.Timezone)
		b = appendBool(b, itemIsStarred, c.IsStarred)
		b = appendBool(b, itemIsArchived, c.IsArchived)
		b = appendTimestamp(b, itemCreatedAt, c.CreatedAt)
		b = appendTimestamp(b, itemUpdatedAt, c.UpdatedAt)
		b = appendString(b, itemPhone, deref(c.Phone))
		b = appendString(b, itemEmail, deref(c.Email))
		b = closeLength(b, at)
	}
	return b, true
}

// listItemsSize is room enough, most often, for appendListItems(nil, cs).
func listItemsSize(cs []store.Contact) int {
	n := 0
	for i := range cs {
		c := &cs[i]
		n += 128 + len(c.FirstName) + len(c.LastName) + len(c.Address) + len(c.City) + len(c.State) + len(c.Zip) +
			len(c.Timezone) + len(deref(c.Phone)) + len(deref(c.Email))
		for _, t := range c.Tags {
			n += 2 + len(t)
		}
	}
	return n
}

// closeLength writes the length of what b holds past at+1 at at, where one byte was kept for
// it, moving that up when the length's varint is longer.
func closeLength(b []byte, at int) []byte {
	n := len(b) - at - 1
	size := protowire.SizeVarint(uint64(n))
	if size == 1 {
		b[at] = byte(n)
		return b
	}
	b = append(b, make([]byte, size-1)...)
	copy(b[at+size:], b[at+1:at+1+n])
	protowire.AppendVarint(b[at:at], uint64(n))
	return b
}

func validText(c *store.Contact) bool {
	for _, s := range [...]string{c.FirstName, c.LastName, c.Address, c.City, c.State, c.Zip, c.Timezone, deref(c.Phone), deref(c.Email)} {
		if !utf8.ValidString(s) {
			return false
		}
	}
	for _, t := range c.Tags {
		if !utf8.ValidString(t) {
			return false
		}
	}
	return true
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendUUIDField appends u as the string field uuid.UUID.String gives.
func appendUUIDField(b []byte, num protowire.Number, u uuid.UUID) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uuidLen)
	return appendUUID(b, u)
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return append(b, 1)
}

// appendTimestamp appends t as the google.protobuf.Timestamp timestamppb.New(t) makes.
func appendTimestamp(b []byte, num protowire.Number, t time.Time) []byte {
	secs, nanos := t.Unix(), int32(t.Nanosecond())
	size := 0
	if secs != 0 {
		size += 1 + protowire.SizeVarint(uint64(secs))
	}
	if nanos != 0 {
		size += 1 + protowire.SizeVarint(uint64(nanos))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	if secs != 0 {
		b = protowire.AppendTag(b, timestampSeconds, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(secs))
	}
	if nanos != 0 {
		b = protowire.AppendTag(b, timestampNanos, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(nanos))
	}
	return b
}
