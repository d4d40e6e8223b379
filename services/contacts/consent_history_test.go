package contacts_test

import (
	"context"
	"encoding/csv"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// history returns every entry of a contact's consent history, newest first, a page of one at
// a time, so the cursor is walked too.
func history(t *testing.T, e *env, ctx context.Context, id string) []*contactsv1.ConsentEntry {
	t.Helper()
	var out []*contactsv1.ConsentEntry
	cursor := ""
	for {
		res, err := e.c.ListConsentHistory(ctx, &contactsv1.ListConsentHistoryRequest{Id: id, Limit: wrapperspb.Int32(1), Cursor: cursor})
		require.NoError(t, err)
		out = append(out, res.GetEntries()...)
		require.Equal(t, res.GetHasMore(), res.GetCursor() != "", "a cursor exactly when more follow")
		if !res.GetHasMore() {
			return out
		}
		cursor = res.GetCursor()
	}
}

// summary is an entry as a test compares it: everything but the times.
type summary struct {
	OptedIn                                                bool
	Source, Detail, MessageID, MessageText, User, ImportID string
}

func summarize(entries []*contactsv1.ConsentEntry) []summary {
	out := make([]summary, len(entries))
	for i, e := range entries {
		out[i] = summary{
			OptedIn: e.GetOptedIn(), Source: e.GetSource(), Detail: e.GetDetail().GetValue(), MessageID: e.GetMessageId().GetValue(),
			MessageText: e.GetMessageText().GetValue(), User: e.GetUser().GetValue(), ImportID: e.GetImportId().GetValue(),
		}
	}
	return out
}

// Every change of a contact's opt-in is one entry, with its evidence, newest first: the
// creation through the API (with its user), a STOP and a START texted (with the message), a
// carrier's refusal (with its code), an opt-out through the API (with its user and note). A
// change that changes nothing (a second STOP, an opt-out of an opted-out contact, a merge
// into the contact) records nothing.
func TestConsentHistoryRecordsEachChangeOnce(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	user := "user-" + orgOf(ctx).String()[:8]
	c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550140"), FirstName: str("Ada")})
	create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550140"), City: str("London")}) // a merge

	stop := func(id, text string) {
		_, err := e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: "+12025550140", OccurredAt: timestamppb.Now(),
			Source: "keyword:STOP", MessageId: id, MessageText: text})
		require.NoError(t, err)
	}
	stop("0190d1f8-0000-7000-8000-000000000001", "Stop")
	stop("0190d1f8-0000-7000-8000-000000000002", "STOP") // already opted out
	_, err := e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: "+12025550140", OptedIn: true,
		Source: "keyword:START", MessageId: "0190d1f8-0000-7000-8000-000000000003", MessageText: "start"})
	require.NoError(t, err)
	_, err = e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: "+12025550140", OccurredAt: timestamppb.Now(), Source: "carrier:21610"})
	require.NoError(t, err)
	_, err = e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: "+12025550140", OptedIn: true, Source: "keyword:START",
		MessageId: "0190d1f8-0000-7000-8000-000000000004", MessageText: "START"})
	require.NoError(t, err)
	res, err := e.c.OptOutContact(ctx, &contactsv1.OptOutContactRequest{Id: c.GetId(), Note: " called the office "})
	require.NoError(t, err)
	assert.False(t, res.GetContact().GetIsOptedIn(), "the answer is the contact, opted out")
	assert.NotNil(t, res.GetContact().GetOptedOutAt())
	_, err = e.c.OptOutContact(ctx, &contactsv1.OptOutContactRequest{Id: c.GetId()})
	require.NoError(t, err, "an opted-out contact's opt-out is answered")

	entries := history(t, e, ctx, c.GetId())
	assert.Equal(t, []summary{
		{OptedIn: false, Source: "api", Detail: "called the office", User: user},
		{OptedIn: true, Source: "keyword", Detail: "START", MessageID: "0190d1f8-0000-7000-8000-000000000004", MessageText: "START"},
		{OptedIn: false, Source: "carrier", Detail: "21610"},
		{OptedIn: true, Source: "keyword", Detail: "START", MessageID: "0190d1f8-0000-7000-8000-000000000003", MessageText: "start"},
		{OptedIn: false, Source: "keyword", Detail: "STOP", MessageID: "0190d1f8-0000-7000-8000-000000000001", MessageText: "Stop"},
		{OptedIn: true, Source: "api", User: user},
	}, summarize(entries))
	assert.Equal(t, c.GetCreatedAt().AsTime(), entries[5].GetOccurredAt().AsTime(), "the first entry is the creation")
	for i := 1; i < len(entries); i++ {
		assert.True(t, entries[i-1].GetRecordedAt().AsTime().After(entries[i].GetRecordedAt().AsTime()), "newest first")
	}
	assert.Len(t, consentEvents(t, e), 5, "one event per change; the creation is not one")

	// The same contact of another organization is a missing one; a read member may list.
	_, err = e.c.ListConsentHistory(as(tenant.AccessAdmin), &contactsv1.ListConsentHistoryRequest{Id: c.GetId()})
	assertNotFound(t, err)
	read := asOrg(orgOf(ctx), tenant.AccessRead)
	assert.Len(t, history(t, e, read, c.GetId()), 6)
	_, err = e.c.OptOutContact(read, &contactsv1.OptOutContactRequest{Id: c.GetId()})
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "an opt-out needs write access")

	// Deleting the contact deletes its history.
	_, err = e.c.DeleteContact(ctx, &contactsv1.DeleteContactRequest{Id: c.GetId()})
	require.NoError(t, err)
	var left int
	require.NoError(t, e.db.QueryRow(context.Background(), `SELECT count(*) FROM consent_events WHERE contact_id = $1`, c.GetId()).Scan(&left))
	assert.Zero(t, left)
	_, err = e.c.ListConsentHistory(ctx, &contactsv1.ListConsentHistoryRequest{Id: c.GetId()})
	assertNotFound(t, err)
}

// An opt-out of a phone no contact has creates the contact with one entry, the opt-out.
func TestConsentHistoryOfAContactAnOptOutCreated(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	res, err := e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: "2025550141", OccurredAt: timestamppb.Now(),
		Source: "text:stop-messaging", MessageId: "m1", MessageText: "please stop texting me"})
	require.NoError(t, err)
	assert.Equal(t, []summary{{Source: "text", Detail: "stop-messaging", MessageID: "m1", MessageText: "please stop texting me"}},
		summarize(history(t, e, ctx, res.GetContactId())))
}

func TestConsentHistoryRequests(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550142")})
	other, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550143")})
	_, err := e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: "2025550142", OccurredAt: timestamppb.Now(), Source: "keyword:STOP"})
	require.NoError(t, err)
	first, err := e.c.ListConsentHistory(ctx, &contactsv1.ListConsentHistoryRequest{Id: c.GetId(), Limit: wrapperspb.Int32(1)})
	require.NoError(t, err)
	require.True(t, first.GetHasMore())

	for _, tc := range []struct {
		field string
		req   *contactsv1.ListConsentHistoryRequest
	}{
		{"limit", &contactsv1.ListConsentHistoryRequest{Id: c.GetId(), Limit: wrapperspb.Int32(0)}},
		{"limit", &contactsv1.ListConsentHistoryRequest{Id: c.GetId(), Limit: wrapperspb.Int32(201)}},
		{"cursor", &contactsv1.ListConsentHistoryRequest{Id: c.GetId(), Cursor: "nope"}},
		{"cursor", &contactsv1.ListConsentHistoryRequest{Id: other.GetId(), Cursor: first.GetCursor()}}, // another contact's
	} {
		_, err := e.c.ListConsentHistory(ctx, tc.req)
		assert.Equal(t, []string{tc.field}, badFields(t, err), "%v", tc.req)
	}
	_, err = e.c.ListConsentHistory(ctx, &contactsv1.ListConsentHistoryRequest{Id: "not-a-uuid"})
	assertNotFound(t, err)
	_, err = e.c.OptOutContact(ctx, &contactsv1.OptOutContactRequest{Id: c.GetId(), Note: strings.Repeat("x", 501)})
	assert.Equal(t, []string{"note"}, badFields(t, err))
}

// Rows an import creates record their opt-in with the import's id, one entry each; a row
// merged into a contact an earlier row of the file created adds none.
func TestImportedContactsRecordTheirImport(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	imp := importCSV(t, e, ctx, "phone,email\n+13035550001,\n+13035550002,a@example.com\n+13035550003,A@example.com\n")
	assert.EqualValues(t, 2, imp.GetCreated())

	list, err := e.c.ListContacts(ctx, &contactsv1.ListContactsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetContacts(), 2)
	for _, c := range list.GetContacts() {
		assert.Equal(t, []summary{{OptedIn: true, Source: "import", ImportID: imp.GetId()}},
			summarize(history(t, e, ctx, c.GetId())), c.GetPhone())
	}
}

// export reads the whole export of a range, or the call's error.
func export(e *env, ctx context.Context, start, end string) ([][]string, error) {
	stream, err := e.c.ExportConsent(ctx, &contactsv1.ExportConsentRequest{Start: start, End: end})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		b.Write(msg.GetData())
	}
	return csv.NewReader(strings.NewReader(b.String())).ReadAll()
}

// The export has the changes that occurred in the range, oldest first, of the caller's
// organization only, its cells guarded against spreadsheet formulas; bad ranges name their
// field.
func TestConsentExport(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550144")})
	create(t, e, as(tenant.AccessWrite), &contactsv1.CreateContactRequest{Phone: str("2025550145")}) // another organization's
	old := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	_, err := e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: "2025550144", OccurredAt: timestamppb.New(old),
		Source: "keyword:STOP", MessageId: "m1", MessageText: "=STOP"})
	require.NoError(t, err)
	_, err = e.c.SetConsent(ctx, &contactsv1.SetConsentRequest{Phone: "2025550144", OptedIn: true, Source: "keyword:START"})
	require.NoError(t, err)

	header := []string{"contactId", "phone", "occurredAt", "optedIn", "source", "detail", "messageId", "messageText", "user", "importId"}
	rows, err := export(e, ctx, "2026-01-10", "2026-01-10")
	require.NoError(t, err)
	assert.Equal(t, [][]string{header,
		{c.GetId(), "+12025550144", "2026-01-10T12:00:00Z", "false", "keyword", "STOP", "m1", "'=STOP", "", ""},
	}, rows, "the day's change only: the creation and the opt-in are later")

	rows, err = export(e, ctx, "", "")
	require.NoError(t, err)
	require.Len(t, rows, 3, "the last 30 days: the creation and the opt-in")
	assert.Equal(t, []string{"true", "api"}, rows[1][3:5])
	assert.Equal(t, []string{"true", "keyword"}, rows[2][3:5])

	rows, err = export(e, ctx, "2026-01-11", "2026-01-12T00:00:00Z")
	require.NoError(t, err)
	assert.Equal(t, [][]string{header}, rows, "nothing in the range: the header alone")

	for _, tc := range []struct{ start, end, field string }{
		{"yesterday", "", "start"},
		{"", "2026-13-01", "end"},
		{"2026-01-10", "2026-01-09", "end"},
	} {
		_, err := export(e, ctx, tc.start, tc.end)
		assert.Equal(t, []string{tc.field}, badFields(t, err), "%+v", tc)
	}
}
