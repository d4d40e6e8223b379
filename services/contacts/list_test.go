package contacts_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// list returns the first names of the contacts req lists.
func list(t *testing.T, e *env, ctx context.Context, req *contactsv1.ListContactsRequest) []string {
	t.Helper()
	res, err := e.c.ListContacts(ctx, req)
	require.NoError(t, err, "%v", req)
	return names(res.GetContacts())
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	for _, p := range []*contactsv1.CreateContactRequest{
		{Phone: str("2025550111"), FirstName: str("Jonathan"), Email: str("jon@example.com"), Tags: []string{"a", "b"}, State: str("CA"), Zip: str("94110")},
		{Phone: str("2025550112"), FirstName: str("Maria"), Tags: []string{"a"}, State: str("NY")},
		{FirstName: str("Noam"), Email: str("noam@example.com"), Tags: []string{"b"}, State: str("TX")},
		{Phone: str("2025550002"), FirstName: str("Land"), Tags: []string{"c"}},
		{Phone: str("2025550113"), FirstName: str("Quit")},
	} {
		create(t, e, ctx, p)
	}
	// Opt-outs arrive from messaging (STOP); here the row is changed directly.
	_, err := e.db.Exec(ctx, `UPDATE contacts SET is_opted_in = false, opted_out_at = now() WHERE first_name = 'Quit'`)
	require.NoError(t, err)
	yes, no := wrapperspb.Bool(true), wrapperspb.Bool(false)

	for _, tc := range []struct {
		req  *contactsv1.ListContactsRequest
		want []string
	}{
		{&contactsv1.ListContactsRequest{}, []string{"Jonathan", "Maria", "Noam", "Land", "Quit"}},
		{&contactsv1.ListContactsRequest{Tags: "a,b"}, []string{"Jonathan", "Maria", "Noam"}},
		{&contactsv1.ListContactsRequest{Tags: "a, b", TagsLogic: "OR"}, []string{"Jonathan", "Maria", "Noam"}},
		{&contactsv1.ListContactsRequest{Tags: "a,b", TagsLogic: "AND"}, []string{"Jonathan"}},
		{&contactsv1.ListContactsRequest{Tags: "b,a,", TagsLogic: "and"}, []string{"Jonathan"}},
		{&contactsv1.ListContactsRequest{Tags: "zzz"}, nil},
		{&contactsv1.ListContactsRequest{HasEmail: yes}, []string{"Jonathan", "Noam"}},
		{&contactsv1.ListContactsRequest{HasEmail: no}, []string{"Maria", "Land", "Quit"}},
		{&contactsv1.ListContactsRequest{HasPhone: no}, []string{"Noam"}},
		{&contactsv1.ListContactsRequest{HasPhone: yes, HasEmail: yes}, []string{"Jonathan"}},
		{&contactsv1.ListContactsRequest{State: "ca,NY"}, []string{"Jonathan", "Maria"}},
		{&contactsv1.ListContactsRequest{Zip: "94110"}, []string{"Jonathan"}},
		{&contactsv1.ListContactsRequest{OptedOut: yes}, []string{"Quit"}},
		{&contactsv1.ListContactsRequest{OptedOut: no}, []string{"Jonathan", "Maria", "Noam", "Land"}},
		{&contactsv1.ListContactsRequest{Tags: "a", State: "NY"}, []string{"Maria"}},
	} {
		assert.ElementsMatch(t, tc.want, list(t, e, ctx, tc.req), "%v", tc.req)
	}

	// Textability is known once the sandbox lookups complete: 0002 is a landline.
	eventually(t, 5*time.Second, "lookups complete", func() bool {
		return len(list(t, e, ctx, &contactsv1.ListContactsRequest{IsTextable: yes}))+
			len(list(t, e, ctx, &contactsv1.ListContactsRequest{IsTextable: no})) == 4
	})
	assert.ElementsMatch(t, []string{"Jonathan", "Maria", "Quit"}, list(t, e, ctx, &contactsv1.ListContactsRequest{IsTextable: yes}))
	assert.ElementsMatch(t, []string{"Land"}, list(t, e, ctx, &contactsv1.ListContactsRequest{IsTextable: no}))

	res, err := e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{Tags: "a"})
	require.NoError(t, err)
	assert.Nil(t, res.Total, "total only when asked")
	assert.Equal(t, int32(50), res.GetLimit())
	assert.Equal(t, "updated_at", res.GetSortBy())
	assert.False(t, res.GetHasMore())
	assert.Empty(t, res.GetCursor())
	res, err = e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{Tags: "a", IncludeTotal: true, Limit: wrapperspb.Int32(1)})
	require.NoError(t, err)
	require.NotNil(t, res.Total)
	assert.Equal(t, int32(2), res.GetTotal(), "the total counts the filtered contacts, not the page")
	assert.Len(t, res.GetContacts(), 1)
	assert.True(t, res.GetHasMore())
}

func TestSearch(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	for _, p := range []*contactsv1.CreateContactRequest{
		{FirstName: str("Jonathan"), LastName: str("Smith"), Phone: str("2025550111")},
		{FirstName: str("Johnny"), LastName: str("Apleseed")},
		{FirstName: str("John"), LastName: str("Doe")},
		{FirstName: str("Maria"), LastName: str("Garcia"), Phone: str("+1 (202) 555-0143")},
		{FirstName: str("Ann"), LastName: str("Lee"), Email: str("ann.lee@example.org")},
		{FirstName: str("Percy"), LastName: str("100%_Sure")},
	} {
		create(t, e, ctx, p)
	}
	search := func(q string) []string {
		return list(t, e, ctx, &contactsv1.ListContactsRequest{Search: q})
	}
	for q, want := range map[string][]string{
		"jonathan":            {"Jonathan"},
		"SMI":                 {"Jonathan"},       // a prefix, case-insensitive
		"jo sm":               {"Jonathan"},       // short terms match by substring, all must match
		"garcia m":            {"Maria"},          // in any order
		"Jonathon":            {"Jonathan"},       // fuzzy: one wrong letter in a long word
		"Johny":               {"Johnny", "John"}, // fuzzy: a dropped letter; John shares 4 of its 6 trigrams too
		"appleseed":           {"Johnny"},         // fuzzy: an extra letter
		"ann.lee@example.org": {"Ann"},
		"example.org":         {"Ann"},
		"zzzz":                nil,
		"100%":                {"Percy"}, // % and _ are literal, not wildcards
		"%":                   {"Percy"},
		"_s":                  {"Percy"},
		// A phone typed in any format finds the contact by its digits.
		"(202) 555-0143": {"Maria"},
		"202-555-0143":   {"Maria"},
		"+12025550143":   {"Maria"},
		"2025550143":     {"Maria"},
		"1 202 555 0143": {"Maria"},
		"555-0143":       {"Maria"},
		"maria 555-0143": {"Maria"},
		"(202) 555-0199": nil,
	} {
		assert.ElementsMatch(t, want, search(q), "search %q", q)
	}
	// What trigram similarity cannot do: a transposition in a short word shares too few
	// trigrams ("jhon" and "john" share one of five) at pg_trgm's 0.6 word threshold.
	assert.Empty(t, search("Jhon"))

	_, err := e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{Search: "a b c d e f g h i"})
	assert.Equal(t, []string{"search"}, badFields(t, err), "at most 8 words")
}

// page walks every page of req by cursor, calling between after each page, and returns the ids
// in order.
func walk(t *testing.T, e *env, ctx context.Context, req *contactsv1.ListContactsRequest, between func(page int)) []string {
	t.Helper()
	var ids []string
	for page := 1; ; page++ {
		res, err := e.c.ListContacts(ctx, req)
		require.NoError(t, err)
		require.LessOrEqual(t, len(res.GetContacts()), int(req.GetLimit().GetValue()))
		for _, c := range res.GetContacts() {
			ids = append(ids, c.GetId())
		}
		if !res.GetHasMore() {
			assert.Empty(t, res.GetCursor(), "no cursor on the last page")
			return ids
		}
		require.NotEmpty(t, res.GetCursor())
		req.Cursor = res.GetCursor()
		if between != nil {
			between(page)
		}
		require.Less(t, page, 100, "paging does not end")
	}
}

func TestCursorPagingIsStableWhileRowsAreAdded(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	org := orgOf(ctx)
	// 30 rows written in one statement share created_at and updated_at: the id breaks ties.
	_, err := e.db.Exec(ctx, `
		INSERT INTO contacts (id, organization_id, first_name)
		SELECT gen_random_uuid(), $1, 'bulk' || g FROM generate_series(1, 30) g`, org)
	require.NoError(t, err)
	for i := range 12 {
		create(t, e, ctx, &contactsv1.CreateContactRequest{FirstName: str(fmt.Sprintf("api%d", i))})
	}
	var before []string
	rows, err := e.db.Query(ctx, `SELECT id::text FROM contacts WHERE organization_id = $1`, org)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		before = append(before, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, before, 42)

	for _, sort := range []string{"", "updated_at", "created_at"} {
		t.Run("sort "+sort, func(t *testing.T) {
			added := 0
			ids := walk(t, e, ctx, &contactsv1.ListContactsRequest{SortBy: sort, Limit: wrapperspb.Int32(5)}, func(int) {
				// A row added between pages sorts before the cursor: it is not listed later.
				create(t, e, ctx, &contactsv1.CreateContactRequest{FirstName: str("late")})
				added++
			})
			seen := map[string]bool{}
			for _, id := range ids {
				assert.False(t, seen[id], "listed twice: %s", id)
				seen[id] = true
			}
			for _, id := range before {
				assert.True(t, seen[id], "skipped: %s", id)
			}
			assert.Len(t, ids, 42, "%d rows were added while paging and none of them is listed", added)
			_, err := e.db.Exec(ctx, `DELETE FROM contacts WHERE organization_id = $1 AND first_name = 'late'`, org)
			require.NoError(t, err)
		})
	}

	// Offset pages agree with cursor pages.
	all := walk(t, e, ctx, &contactsv1.ListContactsRequest{Limit: wrapperspb.Int32(200)}, nil)
	res, err := e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{Limit: wrapperspb.Int32(10), Offset: wrapperspb.Int32(20)})
	require.NoError(t, err)
	var got []string
	for _, c := range res.GetContacts() {
		got = append(got, c.GetId())
	}
	assert.Equal(t, all[20:30], got)
	assert.True(t, res.GetHasMore())
	// The cursor of an offset page continues where it ended; an offset beside a cursor is ignored.
	res, err = e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{Limit: wrapperspb.Int32(10), Offset: wrapperspb.Int32(5), Cursor: res.GetCursor()})
	require.NoError(t, err)
	assert.Equal(t, all[30], res.GetContacts()[0].GetId())
}

func TestListRejectsBadParameters(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	for i := range 3 {
		create(t, e, ctx, &contactsv1.CreateContactRequest{FirstName: str(fmt.Sprint("c", i))})
	}
	res, err := e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{Limit: wrapperspb.Int32(1)})
	require.NoError(t, err)
	cursor := res.GetCursor()
	require.NotEmpty(t, cursor)
	tampered := []byte(cursor)
	tampered[len(tampered)/2] ^= 1
	// Another organization's cursor, valid there, is no position in this organization's list.
	other := as(tenant.AccessWrite)
	for i := range 2 {
		create(t, e, other, &contactsv1.CreateContactRequest{FirstName: str(fmt.Sprint("o", i))})
	}
	res, err = e.c.ListContacts(other, &contactsv1.ListContactsRequest{Limit: wrapperspb.Int32(1)})
	require.NoError(t, err)
	foreign := res.GetCursor()
	require.NotEmpty(t, foreign)
	res, err = e.c.ListContacts(other, &contactsv1.ListContactsRequest{Limit: wrapperspb.Int32(1), Cursor: foreign})
	require.NoError(t, err, "the cursor works in its own organization")

	for _, tc := range []struct {
		field string
		req   *contactsv1.ListContactsRequest
	}{
		{"limit", &contactsv1.ListContactsRequest{Limit: wrapperspb.Int32(201)}},
		{"limit", &contactsv1.ListContactsRequest{Limit: wrapperspb.Int32(0)}},
		{"offset", &contactsv1.ListContactsRequest{Offset: wrapperspb.Int32(-1)}},
		{"sortBy", &contactsv1.ListContactsRequest{SortBy: "name"}},
		{"cursor", &contactsv1.ListContactsRequest{Cursor: string(tampered)}},
		{"cursor", &contactsv1.ListContactsRequest{Cursor: cursor + "x"}},
		{"cursor", &contactsv1.ListContactsRequest{Cursor: "not-a-cursor"}},
		{"cursor", &contactsv1.ListContactsRequest{Cursor: cursor, SortBy: "created_at"}},
		{"cursor", &contactsv1.ListContactsRequest{Cursor: foreign}},
		{"cursor", &contactsv1.ListContactsRequest{Cursor: foreign, Limit: wrapperspb.Int32(200), Tags: "x"}},
		{"tagsLogic", &contactsv1.ListContactsRequest{TagsLogic: "XOR"}},
		{"state", &contactsv1.ListContactsRequest{State: "NY,ZZ"}},
		{"zip", &contactsv1.ListContactsRequest{Zip: "abc"}},
		{"tags", &contactsv1.ListContactsRequest{Tags: string(make([]byte, 65))}},
		{"segmentId", &contactsv1.ListContactsRequest{SegmentId: "not-a-uuid"}},
	} {
		_, err := e.c.ListContacts(ctx, tc.req)
		assert.Equal(t, []string{tc.field}, badFields(t, err), "%v", tc.req)
	}
	_, err = e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{SegmentId: "0190d1f8-0000-7000-8000-00000000dead"})
	assertNotFound(t, err, "unknown segment")
	res, err = e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{Cursor: cursor, Limit: wrapperspb.Int32(200)})
	require.NoError(t, err)
	assert.Len(t, res.GetContacts(), 2, "the untampered cursor still works")
}
