package contacts_test

import (
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// drain reads a whole audience stream and returns its batches.
func drain(t *testing.T, stream contactsv1.ContactsService_StreamAudienceClient) ([][]*contactsv1.AudienceMember, error) {
	t.Helper()
	var out [][]*contactsv1.AudienceMember
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, resp.GetMembers())
	}
}

// The audience is the matching contacts that may be texted, each once, by id, in batches, with
// their merge data; a stream resumes after the last id it delivered.
func TestStreamAudienceSendableContactsInBatches(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	mk := func(phone string, tags ...string) string {
		c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{
			Phone: proto.String(phone), FirstName: proto.String("F" + phone[len(phone)-2:]), City: proto.String("Springfield"),
			Tags: tags, CustomFields: &structpb.Struct{Fields: map[string]*structpb.Value{"team": structpb.NewStringValue("math")}},
		})
		return c.GetId()
	}
	var want []string
	for _, p := range []string{"2025550101", "2025550102", "2025550103"} {
		want = append(want, mk(p, "vip"))
	}
	optedOut := mk("2025550104", "vip")
	landline := mk("2025550002", "vip") // the sandbox lookup's landline
	mk("2025550106", "other")
	pending := mk("2025550003", "vip") // the sandbox lookup never completes
	// Mobile numbers textable as the lookup would make them, without waiting for it; the
	// landline as its lookup finds it; the pending one stays unknown.
	_, err := e.db.Exec(t.Context(), `UPDATE contacts SET is_textable = (id <> $1::uuid) WHERE organization_id = $2 AND id <> $3::uuid`, landline, orgOf(ctx), pending)
	require.NoError(t, err)
	optOut(t, e, ctx, "2025550104", time.Now())
	require.NotContains(t, want, optedOut)
	slices.Sort(want)

	filter := &contactsv1.ContactFilter{Tags: []string{"vip"}}
	stream, err := e.c.StreamAudience(ctx, &contactsv1.StreamAudienceRequest{Filter: filter, BatchSize: 2})
	require.NoError(t, err)
	batches, err := drain(t, stream)
	require.NoError(t, err)
	require.Len(t, batches, 2, "3 members in batches of 2")
	var got []string
	for _, b := range batches {
		for _, m := range b {
			got = append(got, m.GetContactId())
		}
	}
	assert.Equal(t, want, got, "sendable vip contacts only, by id")
	first := batches[0][0]
	assert.Equal(t, "+12025550101", first.GetPhone())
	assert.Equal(t, "F01", first.GetFirstName())
	assert.Equal(t, "Springfield", first.GetCity())
	assert.Equal(t, "math", first.GetCustomFields().GetFields()["team"].GetStringValue())

	stream, err = e.c.StreamAudience(ctx, &contactsv1.StreamAudienceRequest{Filter: filter, AfterContactId: want[0]})
	require.NoError(t, err)
	batches, err = drain(t, stream)
	require.NoError(t, err)
	require.Len(t, batches, 1)
	assert.Len(t, batches[0], 2, "resumed after the first")

	seg, err := e.c.CreateSegment(ctx, &contactsv1.CreateSegmentRequest{Name: "VIP", Filter: filter})
	require.NoError(t, err)
	stream, err = e.c.StreamAudience(ctx, &contactsv1.StreamAudienceRequest{SegmentId: seg.GetSegment().GetId()})
	require.NoError(t, err)
	batches, err = drain(t, stream)
	require.NoError(t, err)
	require.Len(t, batches, 1)
	assert.Len(t, batches[0], 3, "a segment streams its filter's audience")

	// Another organization's segment is a missing one.
	stream, err = e.c.StreamAudience(as(tenant.AccessWrite), &contactsv1.StreamAudienceRequest{SegmentId: seg.GetSegment().GetId()})
	require.NoError(t, err)
	_, err = drain(t, stream)
	assertNotFound(t, err)

	stream, err = e.c.StreamAudience(ctx, &contactsv1.StreamAudienceRequest{SegmentId: seg.GetSegment().GetId(), Filter: filter})
	require.NoError(t, err)
	_, err = drain(t, stream)
	assert.Contains(t, badFields(t, err), "segmentId")
}
