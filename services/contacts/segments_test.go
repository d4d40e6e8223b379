package contacts_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

func TestSegmentsCRUD(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)

	var hdr metadata.MD
	res, err := e.c.CreateSegment(ctx, &contactsv1.CreateSegmentRequest{
		Name:   " VIPs ",
		Filter: &contactsv1.ContactFilter{Tags: []string{"vip"}, States: []string{"ny", "CA"}, HasPhone: wrapperspb.Bool(true)},
	}, grpc.Header(&hdr))
	require.NoError(t, err)
	assert.Equal(t, []string{"201"}, hdr.Get(httpcode.Header))
	vip := res.GetSegment()
	assert.Equal(t, "VIPs", vip.GetName())
	assert.Equal(t, []string{"NY", "CA"}, vip.GetFilter().GetStates(), "states are stored upper-cased")
	assert.Equal(t, "OR", vip.GetFilter().GetTagsLogic(), "the default logic is explicit")
	assert.True(t, vip.GetFilter().GetHasPhone().GetValue())
	assert.Nil(t, vip.GetFilter().GetHasEmail())

	_, err = e.c.CreateSegment(ctx, &contactsv1.CreateSegmentRequest{Name: "vips"})
	assert.Equal(t, codes.AlreadyExists, status.Code(err), "names are unique per organization, case-insensitively")
	res, err = e.c.CreateSegment(ctx, &contactsv1.CreateSegmentRequest{Name: "Everyone"})
	require.NoError(t, err)
	everyone := res.GetSegment()

	listed, err := e.c.ListSegments(ctx, &contactsv1.ListSegmentsRequest{})
	require.NoError(t, err)
	require.Len(t, listed.GetSegments(), 2)
	assert.Equal(t, everyone.GetId(), listed.GetSegments()[0].GetId(), "newest first")

	got, err := e.c.GetSegment(ctx, &contactsv1.GetSegmentRequest{Id: vip.GetId()})
	require.NoError(t, err)
	assert.Equal(t, vip.GetFilter().GetStates(), got.GetSegment().GetFilter().GetStates())

	// A sent filter replaces the whole filter; an unsent name is kept.
	up, err := e.c.UpdateSegment(ctx, &contactsv1.UpdateSegmentRequest{Id: vip.GetId(), Filter: &contactsv1.ContactFilter{Search: "smith", TagsLogic: "and", Tags: []string{"a"}}})
	require.NoError(t, err)
	assert.Equal(t, "VIPs", up.GetSegment().GetName())
	assert.Equal(t, "smith", up.GetSegment().GetFilter().GetSearch())
	assert.Equal(t, "AND", up.GetSegment().GetFilter().GetTagsLogic())
	assert.Empty(t, up.GetSegment().GetFilter().GetStates())
	assert.True(t, up.GetSegment().GetUpdatedAt().AsTime().After(vip.GetUpdatedAt().AsTime()))
	up, err = e.c.UpdateSegment(ctx, &contactsv1.UpdateSegmentRequest{Id: vip.GetId(), Name: str("Big spenders")})
	require.NoError(t, err)
	assert.Equal(t, "smith", up.GetSegment().GetFilter().GetSearch(), "an unsent filter is kept")
	_, err = e.c.UpdateSegment(ctx, &contactsv1.UpdateSegmentRequest{Id: vip.GetId(), Name: str("everyone")})
	assert.Equal(t, codes.AlreadyExists, status.Code(err))

	for _, tc := range []struct {
		field string
		req   *contactsv1.CreateSegmentRequest
	}{
		{"name", &contactsv1.CreateSegmentRequest{Name: "  "}},
		{"name", &contactsv1.CreateSegmentRequest{Name: strings.Repeat("x", 201)}},
		{"filter.states", &contactsv1.CreateSegmentRequest{Name: "x", Filter: &contactsv1.ContactFilter{States: []string{"QQ"}}}},
		{"filter.tagsLogic", &contactsv1.CreateSegmentRequest{Name: "x", Filter: &contactsv1.ContactFilter{TagsLogic: "NOR"}}},
		{"filter.tags", &contactsv1.CreateSegmentRequest{Name: "x", Filter: &contactsv1.ContactFilter{Tags: []string{""}}}},
		{"filter.zip", &contactsv1.CreateSegmentRequest{Name: "x", Filter: &contactsv1.ContactFilter{Zip: "1"}}},
	} {
		_, err := e.c.CreateSegment(ctx, tc.req)
		assert.Equal(t, []string{tc.field}, badFields(t, err), "%v", tc.req)
	}

	del, err := e.c.DeleteSegment(ctx, &contactsv1.DeleteSegmentRequest{Id: vip.GetId()})
	require.NoError(t, err)
	assert.Equal(t, vip.GetId(), del.GetId())
	assert.True(t, del.GetDeleted())
	_, err = e.c.GetSegment(ctx, &contactsv1.GetSegmentRequest{Id: vip.GetId()})
	assertNotFound(t, err)
	_, err = e.c.DeleteSegment(ctx, &contactsv1.DeleteSegmentRequest{Id: vip.GetId()})
	assertNotFound(t, err)
	_, err = e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{SegmentId: vip.GetId()})
	assertNotFound(t, err, "a deleted segment cannot be listed")
	_, err = e.c.GetSegment(ctx, &contactsv1.GetSegmentRequest{Id: "nope"})
	assertNotFound(t, err, "a path id that is not a UUID")
}

func TestSegmentIsEvaluatedWhenUsedAndIgnoresAdHocFilters(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	for _, p := range []*contactsv1.CreateContactRequest{
		{FirstName: str("Jonathan"), Tags: []string{"a", "b"}, State: str("CA")},
		{FirstName: str("Maria"), Tags: []string{"a"}, State: str("NY")},
	} {
		create(t, e, ctx, p)
	}
	res, err := e.c.CreateSegment(ctx, &contactsv1.CreateSegmentRequest{Name: "A and B", Filter: &contactsv1.ContactFilter{Tags: []string{"a", "b"}, TagsLogic: "AND"}})
	require.NoError(t, err)
	seg := res.GetSegment().GetId()

	assert.ElementsMatch(t, []string{"Jonathan"}, list(t, e, ctx, &contactsv1.ListContactsRequest{SegmentId: seg, State: "NY", Search: "Maria"}),
		"search and state are ignored beside a segment")
	assert.ElementsMatch(t, []string{"Jonathan"}, list(t, e, ctx, &contactsv1.ListContactsRequest{SegmentId: seg, State: "ZZ", TagsLogic: "XOR"}),
		"and are not even validated")

	// Evaluated when used: a contact that joins later is in it.
	create(t, e, ctx, &contactsv1.CreateContactRequest{FirstName: str("Late"), Tags: []string{"b", "a"}})
	all, err := e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{SegmentId: seg, IncludeTotal: true})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"Jonathan", "Late"}, names(all.GetContacts()))
	assert.Equal(t, int32(2), all.GetTotal())
}

// An organization's segments are bounded, so listing them is always one bounded answer; the
// bound is per organization.
func TestSegmentsAreCappedPerOrganization(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	for i := range store.MaxSegments {
		_, err := e.c.CreateSegment(ctx, &contactsv1.CreateSegmentRequest{Name: fmt.Sprint("s", i)})
		require.NoError(t, err)
	}
	_, err := e.c.CreateSegment(ctx, &contactsv1.CreateSegmentRequest{Name: "one too many"})
	assert.Equal(t, codes.FailedPrecondition, status.Code(err))
	assert.Equal(t, "SEGMENT_LIMIT_REACHED", apierr.Reason(err))
	_, err = e.c.CreateSegment(as(tenant.AccessWrite), &contactsv1.CreateSegmentRequest{Name: "another org"})
	assert.NoError(t, err)
	list, err := e.c.ListSegments(ctx, &contactsv1.ListSegmentsRequest{})
	require.NoError(t, err)
	assert.Len(t, list.GetSegments(), store.MaxSegments)
}
