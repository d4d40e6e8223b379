package contacts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/contacts"
)

// An import whose merge dies mid-batch (its database session killed, as a crash of the process
// would end it) and whose process then stops is finished by the next process: the lost batch
// is merged again from the last committed one, with the same counts as an undisturbed import,
// no contact twice, and one import_finished event.
func TestImportResumesAfterACrash(t *testing.T) {
	t.Parallel()
	redisURL, _ := redistest.New(t)
	dsn := migrated.NewDatabase(t)
	db, err := testPool(dsn)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	ctx := as(tenant.AccessWrite)
	org := orgOf(ctx)

	// 60,000 new phones (three batches), then 100 lines repeating the first phones with a tag
	// (merged) and one line with no phone or email (rejected).
	const fresh, repeats = 60000, 100
	var b strings.Builder
	b.WriteString("phone,tags\n")
	for i := range fresh {
		fmt.Fprintf(&b, "+1303%07d,\n", 2000000+i)
	}
	for i := range repeats {
		fmt.Fprintf(&b, "+1303%07d,again\n", 2000000+i)
	}
	b.WriteString(",\n")

	var id string
	t.Run("first process", func(t *testing.T) {
		svc, err := contacts.New(context.Background(), config(dsn, redisURL))
		require.NoError(t, err)
		c := contactsv1.NewContactsServiceClient(servetest.Serve(t, svc))
		id = sendCSV(t, c, ctx, b.String(), 64<<10)
		eventually(t, time.Minute, "a batch merged", func() bool {
			got, err := c.GetContactImport(ctx, &contactsv1.GetContactImportRequest{Id: id})
			require.NoError(t, err)
			return got.GetContactImport().GetStatus() == "running" // the rejected line counts from the start
		})
		// Kill the merge's session inside its next batch's transaction; the process stops
		// right after (this subtest's cleanup), before River's retry of the job is due.
		eventually(t, time.Minute, "the merge killed mid-batch", func() bool {
			var killed int
			require.NoError(t, db.QueryRow(context.Background(), `
				SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL
					AND query ILIKE '%import_rows%'`).Scan(&killed))
			return killed > 0
		})
	})

	var imp struct {
		status           string
		processed, total int32
	}
	// Until the import ends, the lines staged are counted in import_uploads.
	require.NoError(t, db.QueryRow(context.Background(), `
		SELECT i.status, i.processed, i.total + coalesce(u.staged_through, 0)
		FROM contact_imports i LEFT JOIN import_uploads u ON u.import_id = i.id WHERE i.id = $1`,
		id).Scan(&imp.status, &imp.processed, &imp.total))
	require.Equal(t, "running", imp.status, "stopped mid-way")
	require.Less(t, imp.processed, imp.total, "stopped mid-way")

	e := startOn(t, dsn, redisURL)
	done := awaitImport(t, e.c, ctx, id, 2*time.Minute)
	assert.EqualValues(t, fresh+repeats+1, done.GetTotal())
	assert.EqualValues(t, fresh+repeats+1, done.GetProcessed())
	assert.EqualValues(t, fresh, done.GetCreated())
	assert.EqualValues(t, repeats, done.GetMerged())
	assert.EqualValues(t, 1, done.GetRejected())

	var contactsN, phones, tagged int
	require.NoError(t, db.QueryRow(context.Background(), `
		SELECT count(*), count(DISTINCT phone), count(*) FILTER (WHERE tags = '{again}') FROM contacts WHERE organization_id = $1`,
		org).Scan(&contactsN, &phones, &tagged))
	assert.Equal(t, fresh, contactsN, "no contact created twice")
	assert.Equal(t, fresh, phones)
	assert.Equal(t, repeats, tagged)

	rows, err := db.Query(context.Background(), `SELECT payload FROM outbox WHERE event_type = 'contact.import_finished'`)
	require.NoError(t, err)
	var events []*eventsv1.ContactImportFinished
	for rows.Next() {
		var payload []byte
		require.NoError(t, rows.Scan(&payload))
		ev := &eventsv1.ContactImportFinished{}
		require.NoError(t, proto.Unmarshal(payload, ev))
		events = append(events, ev)
	}
	require.NoError(t, rows.Err())
	require.Len(t, events, 1, "the import finished once")
	assert.Equal(t, "completed", events[0].GetStatus())
	assert.EqualValues(t, fresh, events[0].GetCreated())
	assert.EqualValues(t, repeats, events[0].GetMerged())
}
