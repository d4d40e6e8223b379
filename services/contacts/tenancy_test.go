package contacts_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// A member of org A who sends org B's ids gets exactly what a missing id gets, and never sees
// B's data.
func TestAnotherOrgsIDsAnswerAsMissing(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	a, b := as(tenant.AccessAdmin), as(tenant.AccessAdmin)
	bContact, _ := create(t, e, b, &contactsv1.CreateContactRequest{
		Phone: str("2025550199"), FirstName: str("Bsecret"), Email: str("b-secret@example.com"), Tags: []string{"b-only"},
	})
	res, err := e.c.CreateSegment(b, &contactsv1.CreateSegmentRequest{Name: "B segment", Filter: &contactsv1.ContactFilter{Tags: []string{"b-only"}}})
	require.NoError(t, err)
	bSegment := res.GetSegment().GetId()
	missing := "0190d1f8-0000-7000-8000-00000000dead"

	calls := map[string]func(id string) (any, error){
		"GetContact": func(id string) (any, error) {
			return e.c.GetContact(a, &contactsv1.GetContactRequest{Id: id})
		},
		"UpdateContact": func(id string) (any, error) {
			return e.c.UpdateContact(a, &contactsv1.UpdateContactRequest{Id: id, FirstName: str("hijack")})
		},
		"DeleteContact": func(id string) (any, error) {
			return e.c.DeleteContact(a, &contactsv1.DeleteContactRequest{Id: id})
		},
		"ListConsentHistory": func(id string) (any, error) {
			return e.c.ListConsentHistory(a, &contactsv1.ListConsentHistoryRequest{Id: id})
		},
		"OptOutContact": func(id string) (any, error) {
			return e.c.OptOutContact(a, &contactsv1.OptOutContactRequest{Id: id})
		},
		"GetSegment": func(id string) (any, error) {
			return e.c.GetSegment(a, &contactsv1.GetSegmentRequest{Id: id})
		},
		"UpdateSegment": func(id string) (any, error) {
			return e.c.UpdateSegment(a, &contactsv1.UpdateSegmentRequest{Id: id, Name: str("hijack")})
		},
		"DeleteSegment": func(id string) (any, error) {
			return e.c.DeleteSegment(a, &contactsv1.DeleteSegmentRequest{Id: id})
		},
		"ListContacts?segmentId": func(id string) (any, error) {
			return e.c.ListContacts(a, &contactsv1.ListContactsRequest{SegmentId: id})
		},
	}
	for name, call := range calls {
		foreignID := bContact.GetId()
		if strings.Contains(name, "egment") {
			foreignID = bSegment
		}
		_, missingErr := call(missing)
		_, foreignErr := call(foreignID)
		assertNotFound(t, foreignErr, name)
		assert.Equal(t, status.Convert(missingErr).Proto(), status.Convert(foreignErr).Proto(), "%s: identical answers", name)
		assert.NotContains(t, foreignErr.Error(), "Bsecret")
	}

	// Lists, searches and merges in A never see B's contact.
	for _, req := range []*contactsv1.ListContactsRequest{
		{}, {Search: "Bsecret"}, {Tags: "b-only"}, {Search: "2025550199"}, {IncludeTotal: true},
	} {
		res, err := e.c.ListContacts(a, req)
		require.NoError(t, err)
		assert.Empty(t, res.GetContacts(), "%v", req)
		assert.Zero(t, res.GetTotal())
	}
	segs, err := e.c.ListSegments(a, &contactsv1.ListSegmentsRequest{})
	require.NoError(t, err)
	assert.Empty(t, segs.GetSegments())
	mine, code := create(t, e, a, &contactsv1.CreateContactRequest{Phone: str("2025550199"), Email: str("b-secret@example.com")})
	assert.Equal(t, "201", code, "the same phone and email in A make a new contact, not a merge into B's")
	assert.NotEqual(t, bContact.GetId(), mine.GetId())
	_, err = e.c.CreateSegment(a, &contactsv1.CreateSegmentRequest{Name: "B segment"})
	assert.NoError(t, err, "segment names are unique per organization only")

	// B's data is intact after A's attempts.
	got, err := e.c.GetContact(b, &contactsv1.GetContactRequest{Id: bContact.GetId()})
	require.NoError(t, err)
	assert.Equal(t, "Bsecret", got.GetContact().GetFirstName())
	seg, err := e.c.GetSegment(b, &contactsv1.GetSegmentRequest{Id: bSegment})
	require.NoError(t, err)
	assert.Equal(t, "B segment", seg.GetSegment().GetName())
}

func TestCallsWithoutAnOrganizationAreRefused(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	_, err := e.c.ListContacts(t.Context(), &contactsv1.ListContactsRequest{})
	assert.Equal(t, codes.Unauthenticated, status.Code(err))
}
