package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// importChunk is how much of the file one message to the contacts service carries.
const importChunk = 64 << 10

// importPoll is how often the import's progress is read while it is merged.
var importPoll = 500 * time.Millisecond

// importResult is what `import` prints: the import's final counts.
type importResult struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Total     int32  `json:"total"`
	Created   int32  `json:"created"`
	Merged    int32  `json:"merged"`
	Rejected  int32  `json:"rejected"`
	Lookups   int32  `json:"lookupsPending"`
	Rejection string `json:"rejectedRows,omitempty"`
}

// importFile imports a CSV file of contacts into an organization through the contacts
// service, as an operator with write access, drawing a progress bar on stderr (the upload,
// then the merge) and printing the final counts. It takes as long as the file needs: the
// command's deadline does not apply.
func importFile(ctx context.Context, fs *flag.FlagSet, args []string, stderr io.Writer) (any, error) {
	org := fs.String("org", "", "organization id")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	orgID, err := uuid.Parse(*org)
	if err != nil {
		return nil, errors.New("--org must be an organization id")
	}
	if fs.NArg() != 1 {
		return nil, errors.New("name one CSV file to import")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	conn, err := dial(registry.Contacts)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	c := contactsv1.NewContactsServiceClient(conn)
	ctx = tenant.AppendToOutgoing(context.WithoutCancel(ctx), tenant.Principal{OrgID: orgID, User: "chorusctl", Access: tenant.AccessWrite})

	bar := progress{w: stderr}
	stream, err := c.ImportContacts(ctx)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, importChunk)
	var sent int64
	for {
		n, rerr := f.Read(buf)
		if n > 0 {
			if err := stream.Send(&contactsv1.ImportContactsRequest{Data: buf[:n]}); err != nil {
				break // the service ended the call; CloseAndRecv says why
			}
			sent += int64(n)
			bar.draw("upload", sent, info.Size())
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return nil, rerr
		}
	}
	res, err := stream.CloseAndRecv()
	if err != nil {
		bar.done()
		return nil, err
	}
	imp := res.GetContactImport()
	for imp.GetStatus() == "queued" || imp.GetStatus() == "running" {
		bar.draw("merge ", int64(imp.GetProcessed()), int64(imp.GetTotal()))
		time.Sleep(importPoll)
		got, err := c.GetContactImport(ctx, &contactsv1.GetContactImportRequest{Id: imp.GetId()})
		if err != nil {
			bar.done()
			return nil, err
		}
		imp = got.GetContactImport()
	}
	bar.draw("merge ", int64(imp.GetProcessed()), int64(imp.GetTotal()))
	bar.done()
	out := importResult{
		ID: imp.GetId(), Status: imp.GetStatus(), Total: imp.GetTotal(), Created: imp.GetCreated(),
		Merged: imp.GetMerged(), Rejected: imp.GetRejected(), Lookups: imp.GetLookupsPending(),
	}
	if out.Rejected > 0 {
		out.Rejection = "GET /api/contacts/imports/" + out.ID + "/rejected"
	}
	if out.Status != "completed" {
		return out, fmt.Errorf("the import %s", out.Status)
	}
	return out, nil
}

// progress draws a one-line bar, redrawn in place.
type progress struct {
	w     io.Writer
	drawn bool
}

const barWidth = 40

func (p *progress) draw(what string, n, of int64) {
	frac := 1.0
	if of > 0 {
		frac = min(1, float64(n)/float64(of))
	}
	full := int(frac * barWidth)
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%% %d/%d", what, strings.Repeat("#", full), strings.Repeat(".", barWidth-full), frac*100, n, of)
	p.drawn = true
}

// done ends the bar's line.
func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
