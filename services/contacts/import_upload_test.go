package contacts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/tenant"
	"github.com/chorus-sms/chorus/pkg/uploadlen"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts"
)

// chunkLines is the lines of a file of declared length staging commits at a time, in these
// tests (small, so a file of several chunks is small).
const chunkLines = 1000

// startChunked runs the service staging uploads of declared length chunkLines at a time.
func startChunked(t *testing.T) *env {
	t.Helper()
	return start(t, func(cfg *contacts.Config) { cfg.ImportChunk = chunkLines })
}

// uploadFile is a file of n lines after its header: new phones, but the last 100 lines repeat
// the first 100 phones with a tag (merged across chunks), and line 3 and the last line are
// rejected as read.
func uploadFile(n int) (head, body string) {
	var b strings.Builder
	for i := range n - 2 {
		if i == 2 {
			b.WriteString(",,\n")
		}
		phone, tag := i, ""
		if i >= n-102 {
			phone, tag = i-(n-102), "again"
		}
		fmt.Fprintf(&b, "+1303%07d,,%s\n", 2000000+phone, tag)
	}
	b.WriteString("not-a-phone,,\n")
	return "phone,email,tags\n", b.String()
}

// lines returns the first n lines of body and the rest.
func lines(body string, n int) (string, string) {
	at := 0
	for range n {
		at += strings.IndexByte(body[at:], '\n') + 1
	}
	return body[:at], body[at:]
}

// declared marks ctx's calls as the gateway marks an upload with a Content-Length.
func declared(ctx context.Context, file string) context.Context {
	return uploadlen.AppendToOutgoing(ctx, int64(len(file)))
}

// getImport answers import id as GET shows it.
func getImport(t *testing.T, e *env, ctx context.Context, id string) *contactsv1.ContactImport {
	t.Helper()
	got, err := e.c.GetContactImport(ctx, &contactsv1.GetContactImportRequest{Id: id})
	require.NoError(t, err)
	return got.GetContactImport()
}

// openUpload starts an upload of declared length and sends part of its file; the call stays
// open until the test sends the rest or cancels ctx.
func openUpload(t *testing.T, e *env, ctx context.Context, file, part string) contactsv1.ContactsService_ImportContactsClient {
	t.Helper()
	stream, err := e.c.ImportContacts(declared(ctx, file))
	require.NoError(t, err)
	for len(part) > 0 {
		n := min(len(part), 64<<10)
		require.NoError(t, stream.Send(&contactsv1.ImportContactsRequest{Data: []byte(part[:n])}))
		part = part[n:]
	}
	return stream
}

// uploadMerging starts an upload of declared length (file, its header included) under call,
// sends its first lines, and waits for the merge of its first chunk to have created contacts;
// it answers the open call and the import's id.
func uploadMerging(t *testing.T, e *env, ctx, call context.Context, file string, first int) (contactsv1.ContactsService_ImportContactsClient, string) {
	t.Helper()
	sent, _ := lines(file, first+1) // the header and first lines
	stream := openUpload(t, e, call, file, sent)
	var id string
	eventually(t, time.Minute, "the first chunk is staged", func() bool {
		err := e.db.QueryRow(context.Background(), `SELECT id::text FROM contact_imports WHERE organization_id = $1`, orgOf(ctx)).Scan(&id)
		return err == nil
	})
	eventually(t, 2*time.Minute, "the first chunk merged while uploading", func() bool {
		return getImport(t, e, ctx, id).GetCreated() > 0
	})
	return stream, id
}

// A file of declared length is staged in chunks, each merged as it is staged, and ends with
// exactly the counts of the same file staged in one transaction.
func TestImportInChunksCountsAsOne(t *testing.T) {
	t.Parallel()
	e := startChunked(t)
	head, body := uploadFile(2*chunkLines + 5000)
	file := head + body

	whole := as(tenant.AccessWrite)
	one := importCSV(t, e, whole, file)
	chunked := as(tenant.AccessWrite)
	inChunks := awaitImport(t, e.c, chunked, sendCSV(t, e.c, declared(chunked, file), file, 64<<10), 5*time.Minute)

	for _, imp := range []*contactsv1.ContactImport{one, inChunks} {
		assert.EqualValues(t, 2*chunkLines+5000, imp.GetTotal())
		assert.EqualValues(t, 2*chunkLines+5000, imp.GetProcessed())
		assert.EqualValues(t, 2*chunkLines+5000-102, imp.GetCreated())
		assert.EqualValues(t, 100, imp.GetMerged())
		assert.EqualValues(t, 2, imp.GetRejected())
		assert.NotNil(t, imp.GetCompletedAt())
	}
	var tagged, staged int
	require.NoError(t, e.db.QueryRow(context.Background(),
		`SELECT count(*) FROM contacts WHERE organization_id = $1 AND tags = '{again}'`, orgOf(chunked)).Scan(&tagged))
	assert.Equal(t, 100, tagged, "the lines of the last chunk merged into those of the first")
	require.NoError(t, e.db.QueryRow(context.Background(),
		`SELECT count(*) FROM import_rows WHERE import_id = $1`, inChunks.GetId()).Scan(&staged))
	assert.Equal(t, 2, staged, "only the rejected rows are kept")
}

// The merge of a file of declared length starts before the upload ends: GET shows lines
// created, and the total staged so far, while the rest of the file has not been sent.
func TestImportMergesWhileUploading(t *testing.T) {
	t.Parallel()
	e := startChunked(t)
	ctx := as(tenant.AccessWrite)
	head, body := uploadFile(2*chunkLines + 5000)
	_, rest := lines(body, chunkLines+500)
	stream, id := uploadMerging(t, e, ctx, ctx, head+body, chunkLines+500)
	during := getImport(t, e, ctx, id)
	assert.Equal(t, "running", during.GetStatus())
	assert.EqualValues(t, chunkLines, during.GetTotal(), "the total so far")
	assert.Nil(t, during.GetCompletedAt())

	require.NoError(t, stream.Send(&contactsv1.ImportContactsRequest{Data: []byte(rest)}))
	res, err := stream.CloseAndRecv()
	require.NoError(t, err)
	assert.EqualValues(t, 2*chunkLines+5000, res.GetContactImport().GetTotal(), "the whole file, once sent")
	done := awaitImport(t, e.c, ctx, id, 5*time.Minute)
	assert.EqualValues(t, 2*chunkLines+5000, done.GetTotal())
	assert.EqualValues(t, 2*chunkLines+5000-102, done.GetCreated())
	assert.EqualValues(t, 100, done.GetMerged())
	assert.EqualValues(t, 2, done.GetRejected())
}

// An upload that breaks off mid-way fails its import once, its lines merged so far imported;
// the whole file imported again completes it, creating nothing twice.
func TestImportBrokenOffUpload(t *testing.T) {
	t.Parallel()
	e := startChunked(t)
	ctx := as(tenant.AccessWrite)
	head, body := uploadFile(2*chunkLines + 5000)
	call, cancel := context.WithCancel(ctx)
	defer cancel()
	_, id := uploadMerging(t, e, ctx, call, head+body, chunkLines+500)
	cancel() // the client is gone

	var failed *contactsv1.ContactImport
	eventually(t, time.Minute, "the import failed", func() bool {
		failed = getImport(t, e, ctx, id)
		return failed.GetStatus() == "failed"
	})
	assert.NotNil(t, failed.GetCompletedAt())
	assert.EqualValues(t, chunkLines, failed.GetTotal(), "the lines staged before it broke off")
	assert.EqualValues(t, chunkLines-1, failed.GetCreated())
	assert.EqualValues(t, 1, failed.GetRejected())
	var events int
	require.NoError(t, e.db.QueryRow(context.Background(),
		`SELECT count(*) FROM outbox WHERE event_type = 'contact.import_finished' AND organization_id = $1`, orgOf(ctx)).Scan(&events))
	assert.Equal(t, 1, events, "its end is published once")

	again := importCSV(t, e, ctx, head+body)
	assert.EqualValues(t, 2*chunkLines+5000-102-(chunkLines-1), again.GetCreated())
	assert.EqualValues(t, chunkLines-1+100, again.GetMerged())
	counts, err := e.c.CountContacts(ctx, &contactsv1.CountContactsRequest{})
	require.NoError(t, err)
	assert.EqualValues(t, 2*chunkLines+5000-102, counts.GetTotal(), "no contact created twice")
}

// A merge that has caught up with an upload whose staging stopped making progress (its process
// gone) fails the import instead of waiting for ever; the staging, were it alive, learns so.
func TestImportStalledUploadFails(t *testing.T) {
	t.Parallel()
	e := startChunked(t)
	ctx := as(tenant.AccessWrite)
	head, body := uploadFile(chunkLines + 5000)
	_, rest := lines(body, chunkLines+500)
	stream, id := uploadMerging(t, e, ctx, ctx, head+body, chunkLines+500)
	// As if staging had made no progress for longer than the merge waits.
	_, err := e.db.Exec(context.Background(),
		`UPDATE import_uploads SET staged_at = now() - interval '1 hour' WHERE import_id = $1`, id)
	require.NoError(t, err)
	eventually(t, time.Minute, "the import failed", func() bool {
		return getImport(t, e, ctx, id).GetStatus() == "failed"
	})
	require.NoError(t, stream.Send(&contactsv1.ImportContactsRequest{Data: []byte(rest)}))
	_, err = stream.CloseAndRecv()
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	assert.EqualValues(t, chunkLines, getImport(t, e, ctx, id).GetTotal(), "nothing staged after it failed")
}
