package contacts_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
)

// optOut records an opt-out of p at `at` and returns the answer.
func optOut(t *testing.T, e *env, ctx context.Context, p string, at time.Time) *contactsv1.SetConsentResponse {
	t.Helper()
	res, err := e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: p, OccurredAt: timestamppb.New(at), Source: "keyword:STOP"})
	require.NoError(t, err)
	return res
}

func optIn(t *testing.T, e *env, ctx context.Context, p string) *contactsv1.SetConsentResponse {
	t.Helper()
	res, err := e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: p, OptedIn: true, OccurredAt: timestamppb.Now(), Source: "keyword:START"})
	require.NoError(t, err)
	return res
}

func getContact(t *testing.T, e *env, ctx context.Context, id string) *contactsv1.Contact {
	t.Helper()
	res, err := e.c.GetContact(ctx, &contactsv1.GetContactRequest{Id: id})
	require.NoError(t, err)
	return res.GetContact()
}

// consentEvents returns the contact.consent_changed events in the outbox, oldest first.
func consentEvents(t *testing.T, e *env) []*eventsv1.ContactConsentChanged {
	t.Helper()
	rows, err := e.db.Query(t.Context(), `SELECT payload FROM outbox WHERE event_type = 'contact.consent_changed' ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []*eventsv1.ContactConsentChanged
	for rows.Next() {
		var payload []byte
		require.NoError(t, rows.Scan(&payload))
		ev := &eventsv1.ContactConsentChanged{}
		require.NoError(t, proto.Unmarshal(payload, ev))
		out = append(out, ev)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestFindContactByPhone(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	a, b := as(tenant.AccessRead), as(tenant.AccessWrite)
	aw := asOrg(orgOf(a), tenant.AccessWrite)
	c, _ := create(t, e, aw, &contactsv1.CreateContactRequest{Phone: str("2025550170"), FirstName: str("Ada")})
	create(t, e, b, &contactsv1.CreateContactRequest{Phone: str("2025550171")})
	// The carrier lookup updates the contact after its creation: compare once it has.
	eventually(t, 15*time.Second, "the lookup completes", func() bool { return textable(t, e, aw, c.GetId()) != nil })

	res, err := e.c.FindContactByPhone(a, &contactsv1.FindContactByPhoneRequest{Phone: "(202) 555-0170"})
	require.NoError(t, err, "any accepted format, with read access")
	assert.True(t, proto.Equal(getContact(t, e, a, c.GetId()), res.GetContact()), "the full contact")

	for _, p := range []string{"+12025550179", "2025550171"} {
		_, err := e.c.FindContactByPhone(a, &contactsv1.FindContactByPhoneRequest{Phone: p})
		assert.Equal(t, codes.NotFound, status.Code(err), p)
		assert.Equal(t, "CONTACT_NOT_FOUND", apierr.Reason(err), "%s: unknown, or another organization's", p)
	}
	for _, p := range []string{"", "555", "2025550170 ext. 9"} {
		_, err := e.c.FindContactByPhone(a, &contactsv1.FindContactByPhoneRequest{Phone: p})
		assert.Equal(t, []string{"phone"}, badFields(t, err), "%q", p)
	}
}

func TestRecordInboundMarksTheSenderTextable(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	a, b := as(tenant.AccessWrite), as(tenant.AccessWrite)
	landline, _ := create(t, e, a, &contactsv1.CreateContactRequest{Phone: str("2025550002")})
	pending, _ := create(t, e, a, &contactsv1.CreateContactRequest{Phone: str("2025550003")})
	bSame, _ := create(t, e, b, &contactsv1.CreateContactRequest{Phone: str("2025550003")})
	eventually(t, 15*time.Second, "the landline lookup completes", func() bool {
		v := textable(t, e, a, landline.GetId())
		return v != nil && !*v
	})

	for _, c := range []*contactsv1.CreatedContact{landline, pending} {
		for range 2 {
			res, err := e.c.RecordInbound(a, &contactsv1.RecordInboundRequest{Phone: c.GetPhone()})
			require.NoError(t, err)
			assert.True(t, res.GetFound())
			assert.Equal(t, c.GetId(), res.GetContactId())
			v := textable(t, e, a, c.GetId())
			require.NotNil(t, v, "an inbound message settles textability")
			assert.True(t, *v, "an inbound message proves the number receives texts, whatever the lookup said")
		}
	}
	assert.Nil(t, textable(t, e, b, bSame.GetId()), "another organization's contact with the phone is untouched")

	before := getContact(t, e, a, landline.GetId()).GetUpdatedAt()
	_, err := e.c.RecordInbound(a, &contactsv1.RecordInboundRequest{Phone: "2025550002"})
	require.NoError(t, err)
	assert.True(t, proto.Equal(before, getContact(t, e, a, landline.GetId()).GetUpdatedAt()), "repeating changes nothing")

	res, err := e.c.RecordInbound(a, &contactsv1.RecordInboundRequest{Phone: "2025550172"})
	require.NoError(t, err)
	assert.False(t, res.GetFound())
	assert.Empty(t, res.GetContactId())
	list, err := e.c.ListContacts(a, &contactsv1.ListContactsRequest{IncludeTotal: true})
	require.NoError(t, err)
	assert.EqualValues(t, 2, list.GetTotal(), "an unknown sender gets no contact")

	_, err = e.c.RecordInbound(a, &contactsv1.RecordInboundRequest{Phone: "nope"})
	assert.Equal(t, []string{"phone"}, badFields(t, err))
	_, err = e.c.RecordInbound(asOrg(orgOf(a), tenant.AccessRead), &contactsv1.RecordInboundRequest{Phone: "2025550002"})
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
}

func TestOptOutKeepsTheEarliestTimeAndOptInClearsIt(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	a, b := as(tenant.AccessWrite), as(tenant.AccessWrite)
	c, _ := create(t, e, a, &contactsv1.CreateContactRequest{Phone: str("2025550180"), FirstName: str("Ada")})
	bSame, _ := create(t, e, b, &contactsv1.CreateContactRequest{Phone: str("2025550180")})
	first := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

	res := optOut(t, e, a, "+1 202 555 0180", first)
	assert.True(t, proto.Equal(&contactsv1.SetConsentResponse{Found: true, ContactId: c.GetId(), IsOptedIn: false, Changed: true}, res), "%v", res)
	got := getContact(t, e, a, c.GetId())
	assert.False(t, got.GetIsOptedIn())
	assert.Equal(t, first, got.GetOptedOutAt().AsTime())

	res = optOut(t, e, a, "2025550180", first.Add(time.Hour))
	assert.False(t, res.GetChanged(), "already opted out")
	assert.Equal(t, first, getContact(t, e, a, c.GetId()).GetOptedOutAt().AsTime(), "a later repeat keeps the earliest time")
	earlier := first.Add(-time.Hour)
	res = optOut(t, e, a, "2025550180", earlier)
	assert.False(t, res.GetChanged())
	assert.Equal(t, earlier, getContact(t, e, a, c.GetId()).GetOptedOutAt().AsTime(), "an earlier opt-out, delivered late, wins")

	bGot := getContact(t, e, b, bSame.GetId())
	assert.True(t, bGot.GetIsOptedIn(), "another organization's contact with the phone keeps its consent")
	assert.Nil(t, bGot.GetOptedOutAt())

	res = optIn(t, e, a, "2025550180")
	assert.True(t, proto.Equal(&contactsv1.SetConsentResponse{Found: true, ContactId: c.GetId(), IsOptedIn: true, Changed: true}, res), "%v", res)
	got = getContact(t, e, a, c.GetId())
	assert.True(t, got.GetIsOptedIn())
	assert.Nil(t, got.GetOptedOutAt())
	assert.Equal(t, "Ada", got.GetFirstName(), "consent changes touch nothing else")
	assert.False(t, optIn(t, e, a, "2025550180").GetChanged(), "opting in twice changes nothing")

	events := consentEvents(t, e)
	require.Len(t, events, 2, "one event per change, none for repeats")
	assert.Equal(t, orgOf(a).String(), events[0].GetOrganizationId())
	assert.Equal(t, c.GetId(), events[0].GetContactId())
	assert.Equal(t, "+12025550180", events[0].GetPhone())
	assert.False(t, events[0].GetIsOptedIn())
	assert.Equal(t, first, events[0].GetOccurredAt().AsTime())
	assert.Equal(t, "keyword:STOP", events[0].GetSource())
	assert.True(t, events[1].GetIsOptedIn())
	assert.Equal(t, "keyword:START", events[1].GetSource())
}

// An opt-out from a number no contact has leaves a suppressed contact behind; creating the
// contact later merges into it without giving consent back.
func TestOptOutOfUnknownPhoneCreatesASuppressedContact(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	a, b := as(tenant.AccessWrite), as(tenant.AccessWrite)
	at := time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)

	res := optIn(t, e, a, "2025550190")
	assert.True(t, proto.Equal(&contactsv1.SetConsentResponse{}, res), "%v: an opt-in of an unknown phone does nothing", res)

	res = optOut(t, e, a, "2025550190", at)
	assert.True(t, res.GetFound())
	assert.True(t, res.GetChanged())
	assert.False(t, res.GetIsOptedIn())
	got := getContact(t, e, a, res.GetContactId())
	assert.Equal(t, "+12025550190", got.GetPhone())
	assert.False(t, got.GetIsOptedIn())
	assert.Equal(t, at, got.GetOptedOutAt().AsTime())
	again := optOut(t, e, a, "2025550190", at)
	assert.Equal(t, res.GetContactId(), again.GetContactId(), "repeating finds the same contact")
	assert.False(t, again.GetChanged())

	merged, code := create(t, e, a, &contactsv1.CreateContactRequest{Phone: str("(202) 555-0190"), FirstName: str("Late"), Tags: []string{"vip"}})
	assert.Equal(t, "200", code)
	assert.Equal(t, "merged", merged.GetOutcome())
	assert.Equal(t, res.GetContactId(), merged.GetId())
	assert.False(t, merged.GetIsOptedIn(), "a create never gives consent back")
	got = getContact(t, e, a, merged.GetId())
	assert.False(t, got.GetIsOptedIn())
	assert.Equal(t, at, got.GetOptedOutAt().AsTime())
	assert.Equal(t, "Late", got.GetFirstName())

	_, err := e.c.FindContactByPhone(b, &contactsv1.FindContactByPhoneRequest{Phone: "2025550190"})
	assert.Equal(t, codes.NotFound, status.Code(err), "nothing is created in another organization")
	assert.Len(t, consentEvents(t, e), 1, "the creating opt-out is the only change")
}

func TestConcurrentOptOutsOfUnknownPhoneMakeOneContact(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	const n = 8
	ids := make(chan string, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			res, err := e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: "2025550191", OccurredAt: timestamppb.Now(), Source: "keyword:STOP"})
			errs <- err
			ids <- res.GetContactId()
		}()
	}
	seen := map[string]bool{}
	for range n {
		require.NoError(t, <-errs)
		seen[<-ids] = true
	}
	assert.Len(t, seen, 1, "every call answers the same contact")
	assert.Len(t, consentEvents(t, e), 1)
}

func TestSetConsentValidation(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	long := make([]byte, 101)
	for i := range long {
		long[i] = 'x'
	}
	for _, tc := range []struct {
		fields []string
		req    *contactsv1.SetConsentRequest
	}{
		{[]string{"phone"}, &contactsv1.SetConsentRequest{Phone: "555", OccurredAt: timestamppb.Now(), Source: "keyword:STOP"}},
		{[]string{"occurredAt"}, &contactsv1.SetConsentRequest{Phone: "2025550192", Source: "keyword:STOP"}},
		{[]string{"occurredAt"}, &contactsv1.SetConsentRequest{Phone: "2025550192", OccurredAt: &timestamppb.Timestamp{Nanos: -1}, Source: "keyword:STOP"}},
		{[]string{"source"}, &contactsv1.SetConsentRequest{Phone: "2025550192", OccurredAt: timestamppb.Now(), Source: string(long)}},
		{[]string{"occurredAt", "phone", "source"}, &contactsv1.SetConsentRequest{}},
		// api and import changes are this service's own; a caller cannot claim them.
		{[]string{"source"}, &contactsv1.SetConsentRequest{Phone: "2025550192", OccurredAt: timestamppb.Now(), Source: "api"}},
		{[]string{"source"}, &contactsv1.SetConsentRequest{Phone: "2025550192", OccurredAt: timestamppb.Now(), Source: "unsubscribed"}},
	} {
		_, err := e.c.SetConsent(ctx, tc.req)
		assert.ElementsMatch(t, tc.fields, badFields(t, err), "%v", tc.req)
	}
	_, err := e.c.SetConsent(asOrg(orgOf(ctx), tenant.AccessRead), &contactsv1.SetConsentRequest{Phone: "2025550192", OptedIn: true})
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
}

func TestCheckSendableAnswersEachPhoneInOrder(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	a, b := as(tenant.AccessWrite), as(tenant.AccessWrite)
	ok, _ := create(t, e, a, &contactsv1.CreateContactRequest{Phone: str("2025550143")})
	landline, _ := create(t, e, a, &contactsv1.CreateContactRequest{Phone: str("2025550002")})
	pending, _ := create(t, e, a, &contactsv1.CreateContactRequest{Phone: str("2025550003")})
	stopped, _ := create(t, e, a, &contactsv1.CreateContactRequest{Phone: str("2025550144")})
	create(t, e, b, &contactsv1.CreateContactRequest{Phone: str("2025550145")})
	optOut(t, e, a, "2025550144", time.Now())
	eventually(t, 15*time.Second, "the lookups complete", func() bool {
		for _, c := range []*contactsv1.CreatedContact{landline, ok, stopped} {
			if textable(t, e, a, c.GetId()) == nil {
				return false
			}
		}
		return true
	})

	// Stored (E.164) phones are looked up as given, the others normalized first; a phone in
	// E.164 form that no contact has is still checked for validity.
	req := []string{"(202) 555-0143", "2025550002", "2025550003", "2025550144", "2025550145", "2025550146", "555", "+12025550143", "+10005550143", "+1 202 555 0144"}
	want := []*contactsv1.Sendability{
		{Phone: "+12025550143", ContactId: ok.GetId(), Sendable: true, Reason: contactsv1.SendableReason_SENDABLE_REASON_OK},
		{Phone: "+12025550002", ContactId: landline.GetId(), Reason: contactsv1.SendableReason_SENDABLE_REASON_NOT_TEXTABLE},
		{Phone: "+12025550003", ContactId: pending.GetId(), Reason: contactsv1.SendableReason_SENDABLE_REASON_LOOKUP_PENDING},
		{Phone: "+12025550144", ContactId: stopped.GetId(), Reason: contactsv1.SendableReason_SENDABLE_REASON_OPTED_OUT},
		{Phone: "+12025550145", Reason: contactsv1.SendableReason_SENDABLE_REASON_NO_CONTACT}, // org B's
		{Phone: "+12025550146", Reason: contactsv1.SendableReason_SENDABLE_REASON_NO_CONTACT},
		{Phone: "555", Reason: contactsv1.SendableReason_SENDABLE_REASON_INVALID_PHONE},
		{Phone: "+12025550143", ContactId: ok.GetId(), Sendable: true, Reason: contactsv1.SendableReason_SENDABLE_REASON_OK},
		{Phone: "+10005550143", Reason: contactsv1.SendableReason_SENDABLE_REASON_INVALID_PHONE},
		{Phone: "+12025550144", ContactId: stopped.GetId(), Reason: contactsv1.SendableReason_SENDABLE_REASON_OPTED_OUT},
	}
	res, err := e.c.CheckSendable(asOrg(orgOf(a), tenant.AccessRead), &contactsv1.CheckSendableRequest{Phones: req})
	require.NoError(t, err, "read access is enough")
	require.Len(t, res.GetResults(), len(want))
	for i := range want {
		assert.True(t, proto.Equal(want[i], res.GetResults()[i]), "%s: want %v, got %v", req[i], want[i], res.GetResults()[i])
	}

	// An inbound message from the pending number makes it sendable; a START from the opted-out one too.
	_, err = e.c.RecordInbound(a, &contactsv1.RecordInboundRequest{Phone: "2025550003"})
	require.NoError(t, err)
	optIn(t, e, a, "2025550144")
	res, err = e.c.CheckSendable(a, &contactsv1.CheckSendableRequest{Phones: []string{"2025550003", "2025550144"}})
	require.NoError(t, err)
	for _, r := range res.GetResults() {
		assert.True(t, r.GetSendable(), r.GetPhone())
	}

	res, err = e.c.CheckSendable(a, &contactsv1.CheckSendableRequest{})
	require.NoError(t, err)
	assert.Empty(t, res.GetResults())
}

func TestCheckSendableTakesAtMost1000Phones(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessRead)
	phones := make([]string, 1001)
	for i := range phones {
		phones[i] = "+1202555" + strconv.Itoa(1000+i%9000)
	}
	_, err := e.c.CheckSendable(ctx, &contactsv1.CheckSendableRequest{Phones: phones})
	assert.Equal(t, []string{"phones"}, badFields(t, err))

	res, err := e.c.CheckSendable(ctx, &contactsv1.CheckSendableRequest{Phones: phones[:1000]})
	require.NoError(t, err)
	assert.Len(t, res.GetResults(), 1000)
}
