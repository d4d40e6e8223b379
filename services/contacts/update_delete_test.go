package contacts_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/contacts"
)

func TestUpdateChangesOnlySentFields(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	fields, _ := structpb.NewStruct(map[string]any{"team": "math", "year": 1843})
	c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{
		FirstName: str("Ada"), LastName: str("Lovelace"), Email: str("ada@example.com"), City: str("London"),
		Tags: []string{"vip", "math"}, CustomFields: fields,
	})

	tags, _ := structpb.NewList([]any{"alumni", " alumni "})
	replaced, _ := structpb.NewStruct(map[string]any{"club": true})
	res, err := e.c.UpdateContact(ctx, &contactsv1.UpdateContactRequest{
		Id: c.GetId(), Tags: tags, CustomFields: replaced, State: str("ca"), IsStarred: proto.Bool(true),
	})
	require.NoError(t, err)
	up := res.GetContact()
	assert.Equal(t, []string{"alumni"}, up.GetTags(), "tags replace the whole list")
	assert.Equal(t, map[string]any{"club": true}, up.GetCustomFields().AsMap(), "customFields replace the whole object")
	assert.Equal(t, "CA", up.GetState())
	assert.True(t, up.GetIsStarred())
	assert.Equal(t, "Ada", up.GetFirstName(), "unsent fields keep their values")
	assert.Equal(t, "London", up.GetCity())
	assert.Equal(t, "ada@example.com", up.GetEmail())
	assert.True(t, up.GetUpdatedAt().AsTime().After(c.GetUpdatedAt().AsTime()), "updated_at moves")

	got, err := e.c.GetContact(ctx, &contactsv1.GetContactRequest{Id: c.GetId()})
	require.NoError(t, err)
	assert.True(t, proto.Equal(up, got.GetContact()), "the response is what is stored")

	// Empty values clear; an empty tag list and custom fields object are values too.
	empty, _ := structpb.NewStruct(nil)
	res, err = e.c.UpdateContact(ctx, &contactsv1.UpdateContactRequest{
		Id: c.GetId(), Email: str(""), City: str(""), Tags: &structpb.ListValue{}, CustomFields: empty,
	})
	require.NoError(t, err)
	assert.Empty(t, res.GetContact().GetEmail())
	assert.Empty(t, res.GetContact().GetCity())
	assert.Empty(t, res.GetContact().GetTags())
	assert.Empty(t, res.GetContact().GetCustomFields().AsMap())

	notStrings, _ := structpb.NewList([]any{"a", 1})
	for _, tc := range []struct {
		field string
		req   *contactsv1.UpdateContactRequest
	}{
		{"tags", &contactsv1.UpdateContactRequest{Id: c.GetId(), Tags: notStrings}},
		{"email", &contactsv1.UpdateContactRequest{Id: c.GetId(), Email: str("@")}},
		{"phone", &contactsv1.UpdateContactRequest{Id: c.GetId(), Phone: str("555")}},
		{"timezone", &contactsv1.UpdateContactRequest{Id: c.GetId(), Timezone: str("Local")}},
	} {
		_, err := e.c.UpdateContact(ctx, tc.req)
		assert.Equal(t, []string{tc.field}, badFields(t, err), "%v", tc.req)
	}
}

func TestUpdateConflictsWithAnotherContactsPhoneOrEmail(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550120"), Email: str("taken@example.com")})
	c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550121")})
	for _, req := range []*contactsv1.UpdateContactRequest{
		{Id: c.GetId(), Email: str("TAKEN@example.com")},
		{Id: c.GetId(), Phone: str("202-555-0120")},
	} {
		_, err := e.c.UpdateContact(ctx, req)
		assert.Equal(t, codes.AlreadyExists, status.Code(err), "%v", req)
		assert.Equal(t, apierr.ReasonConflict, apierr.Reason(err))
	}
	got, err := e.c.GetContact(ctx, &contactsv1.GetContactRequest{Id: c.GetId()})
	require.NoError(t, err)
	assert.Equal(t, "+12025550121", got.GetContact().GetPhone(), "a refused update changes nothing")
	assert.Empty(t, got.GetContact().GetEmail())

	_, err = e.c.UpdateContact(ctx, &contactsv1.UpdateContactRequest{Id: "0190d1f8-0000-7000-8000-00000000dead", FirstName: str("x")})
	assertNotFound(t, err)
	_, err = e.c.UpdateContact(ctx, &contactsv1.UpdateContactRequest{Id: "not-a-uuid", FirstName: str("x")})
	assertNotFound(t, err, "a path id that is not a UUID cannot exist")
}

func TestDeleteWritesOneContactDeletedEvent(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550130"), FirstName: str("Gone")})
	keep, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550131")})

	res, err := e.c.DeleteContact(ctx, &contactsv1.DeleteContactRequest{Id: c.GetId()})
	require.NoError(t, err)
	assert.Equal(t, c.GetId(), res.GetId())
	assert.True(t, res.GetDeleted())
	_, err = e.c.GetContact(ctx, &contactsv1.GetContactRequest{Id: c.GetId()})
	assertNotFound(t, err)
	_, err = e.c.DeleteContact(ctx, &contactsv1.DeleteContactRequest{Id: c.GetId()})
	assertNotFound(t, err, "deleting twice")
	_, err = e.c.DeleteContact(ctx, &contactsv1.DeleteContactRequest{Id: "nope"})
	assertNotFound(t, err)
	_, err = e.c.GetContact(ctx, &contactsv1.GetContactRequest{Id: keep.GetId()})
	require.NoError(t, err, "other contacts stay")

	rows, err := e.db.Query(ctx, `SELECT event_type, organization_id::text, payload FROM outbox`)
	require.NoError(t, err)
	var events []*eventsv1.ContactDeleted
	for rows.Next() {
		var typ, org string
		var payload []byte
		require.NoError(t, rows.Scan(&typ, &org, &payload))
		assert.Equal(t, "contact.deleted", typ)
		assert.Equal(t, orgOf(ctx).String(), org)
		ev := &eventsv1.ContactDeleted{}
		require.NoError(t, proto.Unmarshal(payload, ev))
		events = append(events, ev)
	}
	require.NoError(t, rows.Err())
	require.Len(t, events, 1, "exactly one event, none for the failed second delete")
	assert.Equal(t, c.GetId(), events[0].GetContactId())
	assert.Equal(t, orgOf(ctx).String(), events[0].GetOrganizationId())
	assert.Equal(t, "+12025550130", events[0].GetPhone())
	assert.NotNil(t, events[0].GetDeletedAt())

	// The relay publishes it to the contacts stream, where other services consume it.
	published := func() bool {
		entries, err := e.rdb.XRevRangeN(ctx, outbox.StreamName(contacts.Schema), "+", "-", 1000).Result()
		require.NoError(t, err)
		for _, en := range entries {
			payload, _ := en.Values["payload"].(string)
			ev := &eventsv1.ContactDeleted{}
			if en.Values["type"] == "contact.deleted" && proto.Unmarshal([]byte(payload), ev) == nil && ev.GetContactId() == c.GetId() {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for !published() {
		require.True(t, time.Now().Before(deadline), "contact.deleted was not published to the stream")
		time.Sleep(50 * time.Millisecond)
	}

	// The phone is free again: a new contact, not a merge into the deleted one.
	again, code := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550130")})
	assert.Equal(t, "201", code)
	assert.NotEqual(t, c.GetId(), again.GetId())
}
