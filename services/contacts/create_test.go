package contacts_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

func TestCreateThenMergeByPhoneOrEmail(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	fields, err := structpb.NewStruct(map[string]any{"team": "math", "rank": 1})
	require.NoError(t, err)

	c, code := create(t, e, ctx, &contactsv1.CreateContactRequest{
		Phone: str("(202) 555-0143"), FirstName: str(" Ada "), LastName: str("Lovelace"), Email: str("Ada@Example.com"),
		State: str("ny"), Tags: []string{"vip", " vip", "math"}, CustomFields: fields, Timezone: str("Europe/London"),
	})
	assert.Equal(t, "201", code)
	assert.Equal(t, "created", c.GetOutcome())
	assert.Equal(t, "+12025550143", c.GetPhone())
	assert.Equal(t, "Ada", c.GetFirstName(), "names are trimmed")
	assert.Equal(t, "Ada@Example.com", c.GetEmail(), "email is stored as given")
	assert.Equal(t, []string{"vip", "math"}, c.GetTags(), "tags trimmed and deduplicated")
	assert.Nil(t, c.GetIsTextable(), "null until the lookup completes")
	assert.True(t, c.GetIsOptedIn())
	assert.Equal(t, orgOf(ctx).String(), c.GetOrganizationId())

	// Same phone in another format: merged; sent fields win, unsent keep, tags and custom
	// fields are unioned.
	more, err := structpb.NewStruct(map[string]any{"rank": 2, "club": true})
	require.NoError(t, err)
	m, code := create(t, e, ctx, &contactsv1.CreateContactRequest{
		Phone: str("202.555.0143"), FirstName: str("Augusta"), Tags: []string{"donor", "vip"}, CustomFields: more,
	})
	assert.Equal(t, "200", code)
	assert.Equal(t, "merged", m.GetOutcome())
	assert.Equal(t, c.GetId(), m.GetId())
	assert.Equal(t, "Augusta", m.GetFirstName())
	assert.Equal(t, "Lovelace", m.GetLastName())
	assert.Equal(t, []string{"vip", "math", "donor"}, m.GetTags())
	assert.Equal(t, c.GetCreatedAt().AsTime(), m.GetCreatedAt().AsTime())
	assert.True(t, m.GetUpdatedAt().AsTime().After(c.GetUpdatedAt().AsTime()))

	// By email, case-insensitively.
	m, code = create(t, e, ctx, &contactsv1.CreateContactRequest{Email: str("ADA@example.COM"), City: str("London")})
	assert.Equal(t, "200", code)
	assert.Equal(t, c.GetId(), m.GetId())

	got, err := e.c.GetContact(ctx, &contactsv1.GetContactRequest{Id: c.GetId()})
	require.NoError(t, err)
	full := got.GetContact()
	assert.Equal(t, map[string]any{"team": "math", "rank": float64(2), "club": true}, full.GetCustomFields().AsMap())
	assert.Equal(t, "NY", full.GetState())
	assert.Equal(t, "London", full.GetCity())
	assert.Equal(t, "Europe/London", full.GetTimezone())
	assert.Equal(t, "ADA@example.COM", full.GetEmail(), "sent fields win, the email's spelling too")

	// A contact needs neither phone nor email.
	bare, code := create(t, e, ctx, &contactsv1.CreateContactRequest{FirstName: str("Nobody")})
	assert.Equal(t, "201", code)
	assert.Empty(t, bare.GetPhone())
	assert.Empty(t, bare.GetEmail())
}

func TestCreateConflictsWhenPhoneAndEmailMatchDifferentContacts(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550101")})
	create(t, e, ctx, &contactsv1.CreateContactRequest{Email: str("b@example.com")})
	_, err := e.c.CreateContact(ctx, &contactsv1.CreateContactRequest{Phone: str("2025550101"), Email: str("B@example.com")})
	assert.Equal(t, codes.AlreadyExists, status.Code(err))
	assert.Equal(t, apierr.ReasonConflict, apierr.Reason(err))

	// Merging a phone-matched contact with an email that is free is fine.
	m, code := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550101"), Email: str("a@example.com")})
	assert.Equal(t, "200", code)
	assert.Equal(t, "a@example.com", m.GetEmail())
}

func TestConcurrentCreatesOfOnePhoneMakeOneContact(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	const n = 12
	var wg sync.WaitGroup
	type result struct {
		id, outcome, code string
		err               error
	}
	results := make(chan result, n)
	for i := range n {
		wg.Go(func() {
			req := &contactsv1.CreateContactRequest{Phone: str("+1 202 555 0177"), Tags: []string{fmt.Sprint("t", i)}}
			if i%2 == 0 {
				req.Email = str("same@example.com")
			}
			var hdr metadata.MD
			res, err := e.c.CreateContact(ctx, req, grpc.Header(&hdr))
			results <- result{id: res.GetContact().GetId(), outcome: res.GetContact().GetOutcome(), code: strings.Join(hdr.Get(httpcode.Header), ","), err: err}
		})
	}
	wg.Wait()
	close(results)
	outcomes, codes := map[string]int{}, map[string]int{}
	ids := map[string]bool{}
	for r := range results {
		require.NoError(t, r.err, "a race on the unique index is a merge, never an error")
		outcomes[r.outcome]++
		codes[r.code]++
		ids[r.id] = true
	}
	assert.Equal(t, map[string]int{"created": 1, "merged": n - 1}, outcomes)
	assert.Equal(t, map[string]int{"201": 1, "200": n - 1}, codes)
	assert.Len(t, ids, 1)
	var tags []string
	require.NoError(t, e.db.QueryRow(ctx, `SELECT tags FROM contacts WHERE organization_id = $1`, orgOf(ctx)).Scan(&tags))
	assert.Len(t, tags, n, "every merge's tag was kept")
}

func TestCreateValidationNamesTheField(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	tooMany := map[string]any{}
	for i := range 21 {
		tooMany[fmt.Sprintf("f%d", i)] = "x"
	}
	st := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		require.NoError(t, err)
		return s
	}
	for _, tc := range []struct {
		field string
		req   *contactsv1.CreateContactRequest
	}{
		{"phone", &contactsv1.CreateContactRequest{Phone: str("12345")}},
		{"email", &contactsv1.CreateContactRequest{Email: str("not an email")}},
		{"email", &contactsv1.CreateContactRequest{Email: str("Ada <ada@example.com>")}},
		{"state", &contactsv1.CreateContactRequest{State: str("ZZ")}},
		{"zip", &contactsv1.CreateContactRequest{Zip: str("9411")}},
		{"timezone", &contactsv1.CreateContactRequest{Timezone: str("Mars/Olympus")}},
		{"customFields", &contactsv1.CreateContactRequest{CustomFields: st(tooMany)}},
		{"customFields", &contactsv1.CreateContactRequest{CustomFields: st(map[string]any{"has space": "x"})}},
		{"customFields", &contactsv1.CreateContactRequest{CustomFields: st(map[string]any{"nested": map[string]any{"a": 1}})}},
		{"customFields", &contactsv1.CreateContactRequest{CustomFields: st(map[string]any{"FirstName": "shadows a merge field"})}},
		{"tags", &contactsv1.CreateContactRequest{Tags: []string{"ok", " "}}},
		{"tags", &contactsv1.CreateContactRequest{Tags: []string{"a,b"}}},
		{"firstName", &contactsv1.CreateContactRequest{FirstName: str(strings.Repeat("x", 101))}},
	} {
		_, err := e.c.CreateContact(ctx, tc.req)
		assert.Equal(t, []string{tc.field}, badFields(t, err), "%v", tc.req)
	}
	// Every failing field is named at once.
	_, err := e.c.CreateContact(ctx, &contactsv1.CreateContactRequest{Phone: str("1"), State: str("XX")})
	assert.ElementsMatch(t, []string{"phone", "state"}, badFields(t, err))

	list, err := e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{})
	require.NoError(t, err)
	assert.Empty(t, list.GetContacts(), "nothing was stored by a rejected request")
}

// tagRange returns n tags named prefix0, prefix1, ...
func tagRange(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(prefix, i)
	}
	return out
}

// customStruct returns n custom fields named prefix0, prefix1, ...
func customStruct(t *testing.T, prefix string, n int) *structpb.Struct {
	t.Helper()
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprint(prefix, i)] = i
	}
	s, err := structpb.NewStruct(m)
	require.NoError(t, err)
	return s
}

func TestMergeKeepsEveryPerContactLimit(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	phone := str("2025550150")
	c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: phone, FirstName: str("Ada"),
		Tags: tagRange("a", 50), CustomFields: customStruct(t, "a", 15)})

	for _, tc := range []struct {
		name string
		req  *contactsv1.CreateContactRequest
		want map[string]string
	}{
		{"50 new tags", &contactsv1.CreateContactRequest{Phone: phone, FirstName: str("Changed"), Tags: tagRange("b", 50)},
			map[string]string{"tags": "a contact has at most 50 tags; this merge would make 100"}},
		{"one new tag", &contactsv1.CreateContactRequest{Phone: phone, Tags: []string{"a0", "new"}},
			map[string]string{"tags": "a contact has at most 50 tags; this merge would make 51"}},
		{"15 + 15 custom fields", &contactsv1.CreateContactRequest{Phone: phone, CustomFields: customStruct(t, "b", 15)},
			map[string]string{"customFields": "a contact has at most 20 custom fields; this merge would make 30"}},
		{"both", &contactsv1.CreateContactRequest{Email: str("ada@example.com"), Phone: phone, Tags: tagRange("c", 3), CustomFields: customStruct(t, "c", 6)},
			map[string]string{
				"tags":         "a contact has at most 50 tags; this merge would make 53",
				"customFields": "a contact has at most 20 custom fields; this merge would make 21",
			}},
	} {
		_, err := e.c.CreateContact(ctx, tc.req)
		assert.Len(t, badFields(t, err), len(tc.want), tc.name)
		assert.Equal(t, tc.want, apierr.FieldViolations(err), tc.name)
	}

	got := getContact(t, e, ctx, c.GetId())
	assert.Equal(t, tagRange("a", 50), got.GetTags(), "a refused merge changes nothing")
	assert.Len(t, got.GetCustomFields().GetFields(), 15)
	assert.Equal(t, "Ada", got.GetFirstName())
	assert.Empty(t, got.GetEmail())

	// A merge that stays within the limits still applies: known tags and keys cost nothing.
	res, err := e.c.CreateContact(ctx, &contactsv1.CreateContactRequest{Phone: phone, FirstName: str("Augusta"),
		Tags: []string{"a1", "a2"}, CustomFields: customStruct(t, "b", 5)})
	require.NoError(t, err)
	assert.Equal(t, "merged", res.GetContact().GetOutcome())
	got = getContact(t, e, ctx, c.GetId())
	assert.Len(t, got.GetTags(), 50)
	assert.Len(t, got.GetCustomFields().GetFields(), 20)
	assert.Equal(t, "Augusta", got.GetFirstName())
}

func TestConcurrentMergesCannotTogetherPassTheTagLimit(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550151")})
	const n = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		oks  int
		errs []error
	)
	for i := range n {
		wg.Go(func() {
			_, err := e.c.CreateContact(ctx, &contactsv1.CreateContactRequest{Phone: str("2025550151"), Tags: tagRange(fmt.Sprint("m", i, "-"), 30)})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				oks++
			} else {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 1, oks, "30 new tags fit once; a second 30 would make 60")
	for _, err := range errs {
		assert.Equal(t, []string{"tags"}, badFields(t, err))
	}
	assert.Len(t, getContact(t, e, ctx, c.GetId()).GetTags(), 30)
}

func TestWritesNeedWriteAccess(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	w := as(tenant.AccessWrite)
	c, _ := create(t, e, w, &contactsv1.CreateContactRequest{Phone: str("2025550160")})
	r := asOrg(orgOf(w), tenant.AccessRead)

	_, err := e.c.CreateContact(r, &contactsv1.CreateContactRequest{Phone: str("2025550161")})
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = e.c.UpdateContact(r, &contactsv1.UpdateContactRequest{Id: c.GetId(), FirstName: str("x")})
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = e.c.DeleteContact(r, &contactsv1.DeleteContactRequest{Id: c.GetId()})
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = e.c.CreateSegment(r, &contactsv1.CreateSegmentRequest{Name: "s"})
	assert.Equal(t, codes.PermissionDenied, status.Code(err))

	_, err = e.c.GetContact(r, &contactsv1.GetContactRequest{Id: c.GetId()})
	assert.NoError(t, err, "reading needs read access only")
	_, err = e.c.ListContacts(r, &contactsv1.ListContactsRequest{})
	assert.NoError(t, err)
}

// A contact stored over the tag limit before merges were checked can still be merged into, as
// long as the merge adds no tag; one that adds a tag is refused.
func TestMergeIntoAContactAlreadyOverTheLimit(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	phone := str("2025550152")
	c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: phone, Tags: tagRange("a", 50)})
	_, err := e.db.Exec(t.Context(), `UPDATE contacts SET tags = tags || ARRAY['x1','x2','x3'] WHERE id = $1`, c.GetId())
	require.NoError(t, err)

	res, err := e.c.CreateContact(ctx, &contactsv1.CreateContactRequest{Phone: phone, FirstName: str("Ada"), Tags: []string{"a1"}})
	require.NoError(t, err, "a merge that adds no tag is not refused for the tags already there")
	assert.Equal(t, "merged", res.GetContact().GetOutcome())
	assert.Equal(t, "Ada", getContact(t, e, ctx, c.GetId()).GetFirstName())

	_, err = e.c.CreateContact(ctx, &contactsv1.CreateContactRequest{Phone: phone, Tags: []string{"new"}})
	assert.Equal(t, []string{"tags"}, badFields(t, err), "a merge that adds one is")
}
