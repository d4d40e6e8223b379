package contacts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// importCSV streams file in small chunks, as the gateway does, and waits for the import to
// end. The bound is a deadlock guard, not a speed check: rows that merge into existing contacts
// are merged one by one, and a loaded 2-core machine takes over a minute for the 6,000 of
// TestImportAcrossBatches.
func importCSV(t *testing.T, e *env, ctx context.Context, file string) *contactsv1.ContactImport {
	t.Helper()
	return awaitImport(t, e.c, ctx, sendCSV(t, e.c, ctx, file, 1000), 5*time.Minute)
}

// sendCSV streams file in chunks of chunk bytes and answers the import's id.
func sendCSV(t *testing.T, c contactsv1.ContactsServiceClient, ctx context.Context, file string, chunk int) string {
	t.Helper()
	stream, err := c.ImportContacts(ctx)
	require.NoError(t, err)
	for len(file) > 0 {
		n := min(len(file), chunk)
		require.NoError(t, stream.Send(&contactsv1.ImportContactsRequest{Data: []byte(file[:n])}))
		file = file[n:]
	}
	res, err := stream.CloseAndRecv()
	require.NoError(t, err)
	return res.GetContactImport().GetId()
}

// awaitImport waits for import id to complete and answers it.
func awaitImport(t *testing.T, c contactsv1.ContactsServiceClient, ctx context.Context, id string, within time.Duration) *contactsv1.ContactImport {
	t.Helper()
	var imp *contactsv1.ContactImport
	eventually(t, within, "the import completes", func() bool {
		got, err := c.GetContactImport(ctx, &contactsv1.GetContactImportRequest{Id: id})
		require.NoError(t, err)
		imp = got.GetContactImport()
		return imp.GetStatus() == "completed"
	})
	return imp
}

// A file of several batches: a row merges into a row of an earlier batch and of its own, a row
// whose phone is one contact's and email another's is rejected with the create's reason, and
// the staged rows are cleared but the rejected ones.
func TestImportAcrossBatches(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("+12025550001"), FirstName: str("A")})
	create(t, e, ctx, &contactsv1.CreateContactRequest{Email: str("b@example.com"), FirstName: str("B")})

	const n = 12000
	var b strings.Builder
	b.WriteString("phone,email,tags\n")
	for i := range n {
		// Lines 6001.. repeat the phones of lines 1..; each repeat adds a tag.
		fmt.Fprintf(&b, "+1303%07d,,t%d\n", 2000000+i%6000, i/6000)
	}
	b.WriteString("+12025550001,B@example.com,\n") // ambiguous
	imp := importCSV(t, e, ctx, b.String())
	assert.EqualValues(t, n+1, imp.GetTotal())
	assert.EqualValues(t, n+1, imp.GetProcessed())
	assert.EqualValues(t, 6000, imp.GetCreated())
	assert.EqualValues(t, 6000, imp.GetMerged())
	assert.EqualValues(t, 1, imp.GetRejected())

	counts, err := e.c.CountContacts(ctx, &contactsv1.CountContactsRequest{})
	require.NoError(t, err)
	assert.EqualValues(t, 6002, counts.GetTotal())
	var tags []string
	require.NoError(t, e.db.QueryRow(context.Background(),
		`SELECT tags FROM contacts WHERE organization_id = $1 AND phone = '+13032000042'`, orgOf(ctx)).Scan(&tags))
	assert.Equal(t, []string{"t0", "t1"}, tags)

	var staged int
	require.NoError(t, e.db.QueryRow(context.Background(), `SELECT count(*) FROM import_rows`).Scan(&staged))
	assert.Equal(t, 1, staged, "only the rejected row is kept")

	stream, err := e.c.StreamRejectedRows(ctx, &contactsv1.StreamRejectedRowsRequest{Id: imp.GetId()})
	require.NoError(t, err)
	var out strings.Builder
	for {
		msg, err := stream.Recv()
		if err != nil {
			break
		}
		out.Write(msg.GetData())
	}
	assert.Equal(t, "phone,email,tags,reason\n+12025550001,B@example.com,,"+
		"the phone belongs to one contact and the email to another; merging cannot resolve it\n", out.String())

	// Each created phone is looked up, in bulk: all but the sandbox's always-failing number
	// (+13032000003, pending until its retries end) are done, the landline (…0002) not textable.
	eventually(t, time.Minute, "the lookups are done", func() bool {
		got, err := e.c.GetContactImport(ctx, &contactsv1.GetContactImportRequest{Id: imp.GetId()})
		require.NoError(t, err)
		return got.GetContactImport().GetLookupsPending() == 1
	})
	counts, err = e.c.CountContacts(ctx, &contactsv1.CountContactsRequest{})
	require.NoError(t, err)
	assert.EqualValues(t, 5999, counts.GetTextable(), "5,998 imported and the first contact")
}

// Another organization's import is missing; reading needs no write access, importing does.
func TestImportTenancy(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	imp := importCSV(t, e, ctx, "phone\n2025550101\n")
	_, err := e.c.GetContactImport(as(tenant.AccessWrite), &contactsv1.GetContactImportRequest{Id: imp.GetId()})
	assertNotFound(t, err)
	_, err = e.c.GetContactImport(asOrg(orgOf(ctx), tenant.AccessRead), &contactsv1.GetContactImportRequest{Id: imp.GetId()})
	require.NoError(t, err)
	stream, err := e.c.ImportContacts(asOrg(orgOf(ctx), tenant.AccessRead))
	require.NoError(t, err)
	_, err = stream.CloseAndRecv()
	require.Error(t, err)
}

// Rows that match one contact each are merged set-wise by the create's rules: a merge past a
// limit is rejected with the create's reason, a phone given by email is looked up.
func TestImportMergesIntoContacts(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	fields := map[string]any{}
	for i := range 19 {
		fields[fmt.Sprintf("k%d", i)] = "v"
	}
	custom, err := structpb.NewStruct(fields)
	require.NoError(t, err)
	create(t, e, ctx, &contactsv1.CreateContactRequest{Email: str("x@example.com"), CustomFields: custom})
	y, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Email: str("y@example.com"), Tags: []string{"a"}})

	file := "phone,email,tags,f20,f21\n,x@example.com,,a,b\n2025550302,Y@example.com,b;a,,\n"
	imp := importCSV(t, e, ctx, file)
	assert.EqualValues(t, 1, imp.GetMerged())
	assert.EqualValues(t, 1, imp.GetRejected())
	got, err := e.c.GetContact(ctx, &contactsv1.GetContactRequest{Id: y.GetId()})
	require.NoError(t, err)
	assert.Equal(t, "+12025550302", got.GetContact().GetPhone())
	assert.Equal(t, "Y@example.com", got.GetContact().GetEmail(), "sent fields win")
	assert.Equal(t, []string{"a", "b"}, got.GetContact().GetTags())
	eventually(t, 10*time.Second, "the phone given by the import is looked up", func() bool {
		got, err := e.c.GetContact(ctx, &contactsv1.GetContactRequest{Id: y.GetId()})
		require.NoError(t, err)
		return got.GetContact().GetIsTextable().GetValue()
	})
	stream, err := e.c.StreamRejectedRows(ctx, &contactsv1.StreamRejectedRowsRequest{Id: imp.GetId()})
	require.NoError(t, err)
	msg, err := stream.Recv()
	require.NoError(t, err)
	assert.Contains(t, string(msg.GetData()), "a contact has at most 20 custom fields; this merge would make 21")

	// Read after the lookup above has written, so only the second import could move it.
	got, err = e.c.GetContact(ctx, &contactsv1.GetContactRequest{Id: y.GetId()})
	require.NoError(t, err)
	updated := got.GetContact().GetUpdatedAt().AsTime()
	again := importCSV(t, e, ctx, file)
	assert.EqualValues(t, 1, again.GetMerged())
	got, err = e.c.GetContact(ctx, &contactsv1.GetContactRequest{Id: y.GetId()})
	require.NoError(t, err)
	assert.Equal(t, updated, got.GetContact().GetUpdatedAt().AsTime(), "the same file again changes nothing")
}
