package contacts_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// signUp is the opt-in messaging records when a phone texts a sign-up keyword.
func signUp(p string, tags ...string) *contactsv1.SetConsentRequest {
	return &contactsv1.SetConsentRequest{
		Phone: p, OptedIn: true, OccurredAt: timestamppb.Now(), Source: "signup:JOIN",
		MessageId: "0190b5a0-0000-7000-8000-000000000001", MessageText: "join",
		AddTags: tags, CreateIfMissing: true,
	}
}

// A sign-up of an unknown phone creates the contact opted in with its tag; one of a known
// contact merges the tag in (union, no duplicate) and opts an opted-out contact back in.
func TestSignUpCreatesOrMergesTheContact(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)

	res, err := e.c.SetConsent(ctx, signUp("2025550170", " vip "))
	require.NoError(t, err)
	assert.True(t, res.GetFound())
	assert.True(t, res.GetChanged(), "the sign-up created the contact")
	assert.True(t, res.GetIsOptedIn())
	got := getContact(t, e, ctx, res.GetContactId())
	assert.Equal(t, "+12025550170", got.GetPhone())
	assert.True(t, got.GetIsOptedIn())
	assert.Equal(t, []string{"vip"}, got.GetTags(), "tags are trimmed as a create trims them")

	again, err := e.c.SetConsent(ctx, signUp("2025550170", "vip"))
	require.NoError(t, err)
	assert.Equal(t, res.GetContactId(), again.GetContactId())
	assert.False(t, again.GetChanged(), "already opted in")
	assert.Equal(t, []string{"vip"}, getContact(t, e, ctx, res.GetContactId()).GetTags(), "no duplicate tag")

	known, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550171"), FirstName: str("Ada"), Tags: []string{"old"}})
	optOut(t, e, ctx, "2025550171", time.Now())
	res, err = e.c.SetConsent(ctx, signUp("2025550171", "vip"))
	require.NoError(t, err)
	assert.Equal(t, known.GetId(), res.GetContactId())
	assert.True(t, res.GetChanged(), "opted back in")
	got = getContact(t, e, ctx, known.GetId())
	assert.True(t, got.GetIsOptedIn())
	assert.Nil(t, got.GetOptedOutAt())
	assert.Equal(t, []string{"old", "vip"}, got.GetTags(), "existing tags first, the sign-up's added")
	assert.Equal(t, "Ada", got.GetFirstName())

	events := consentEvents(t, e)
	require.Len(t, events, 3, "created opted in, the other's opt-out, its opt-in again")
	assert.Equal(t, "signup:JOIN", events[0].GetSource())
	assert.True(t, events[0].GetIsOptedIn())
	assert.Equal(t, "signup:JOIN", events[2].GetSource())
	assert.True(t, events[2].GetIsOptedIn())

	res, err = e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: "2025550172", OptedIn: true, AddTags: []string{"vip"}, Source: "signup:JOIN"})
	require.NoError(t, err)
	assert.False(t, res.GetFound(), "without createIfMissing an unknown phone still gets no contact")
}

// A sign-up's tags are validated as a create's, and the merge keeps the 50-tag limit.
func TestSignUpTagsFollowTheContactRules(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	for _, tags := range [][]string{{""}, {"a,b"}} {
		_, err := e.c.SetConsent(ctx, signUp("2025550173", tags...))
		assert.Equal(t, []string{"addTags"}, badFields(t, err), "%q", tags)
	}
	optOutWithTags := &contactsv1.SetConsentRequest{Phone: "2025550173", OccurredAt: timestamppb.Now(), AddTags: []string{"vip"}, Source: "keyword:STOP"}
	_, err := e.c.SetConsent(ctx, optOutWithTags)
	assert.Equal(t, []string{"addTags"}, badFields(t, err), "an opt-out adds no tags")

	full := make([]string, 50)
	for i := range full {
		full[i] = "t" + strconv.Itoa(i)
	}
	c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550174"), Tags: full})
	_, err = e.c.SetConsent(ctx, signUp("2025550174", "vip"))
	assert.Equal(t, []string{"addTags"}, badFields(t, err), "a 51st tag is refused")
	assert.Len(t, getContact(t, e, ctx, c.GetId()).GetTags(), 50, "nothing written")
	_, err = e.c.SetConsent(ctx, signUp("2025550174", "t3"))
	assert.NoError(t, err, "a tag the contact has adds nothing")
}
