package server

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
	"github.com/chorus-sms/chorus/pkg/uploadlen"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// The columns of an import file that are contact fields; any other column is a custom field.
const (
	colPhone     = "phone"
	colFirstName = "firstName"
	colLastName  = "lastName"
	colEmail     = "email"
	colAddress   = "address"
	colCity      = "city"
	colState     = "state"
	colZip       = "zip"
	colTimezone  = "timezone"
	colTags      = "tags"
)

var knownColumns = []string{colPhone, colFirstName, colLastName, colEmail, colAddress, colCity, colState, colZip, colTimezone, colTags}

// csvChunk is about how much CSV one message of a CSV stream (rejected rows, consent export)
// carries.
const csvChunk = 64 << 10

// ImportContacts stages the CSV file the gateway streams, row by row (nothing of it is kept in
// memory past its row), and answers the import once the file is staged. A file whose length
// the gateway declares (uploadlen) is staged in chunks, so its merge starts while the rest is
// still arriving; any other in one transaction, so a body cut off as too large leaves nothing.
func (s *Server) ImportContacts(stream contactsv1.ContactsService_ImportContactsServer) error {
	ctx := stream.Context()
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return err
	}
	r := csv.NewReader(&chunkReader{recv: stream.Recv})
	r.FieldsPerRecord, r.LazyQuotes, r.ReuseRecord = -1, true, true
	head, err := r.Read()
	if err != nil && !isCSVError(err) {
		if errors.Is(err, io.EOF) {
			return fileError("must be a CSV file with a header row")
		}
		return err
	}
	if err != nil {
		return fileError("the header row is not valid CSV: " + err.Error())
	}
	l, err := newLayout(head)
	if err != nil {
		return err
	}
	next := func() (store.ImportRow, bool, error) {
		rec, err := r.Read()
		switch {
		case errors.Is(err, io.EOF):
			return store.ImportRow{}, false, nil
		case isCSVError(err):
			return store.ImportRow{Cells: []string{}, Reason: "not valid CSV: " + err.Error()}, true, nil
		case err != nil:
			return store.ImportRow{}, false, err
		}
		return l.row(rec), true, nil
	}
	chunk := int32(0)
	if uploadlen.Declared(ctx) {
		chunk = s.chunk // the body ends as declared or the call fails: commit as it comes
	}
	imp, err := s.store.StageImport(ctx, org, l.header, next, s.imports, chunk)
	if err != nil {
		return storeError(err, "import")
	}
	return stream.SendAndClose(&contactsv1.ImportContactsResponse{ContactImport: toImport(imp)})
}

// GetContactImport answers an import's status and counts.
func (s *Server) GetContactImport(ctx context.Context, req *contactsv1.GetContactImportRequest) (*contactsv1.GetContactImportResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetId(), "import")
	if err != nil {
		return nil, err
	}
	imp, err := s.store.GetImport(ctx, org, id)
	if err != nil {
		return nil, storeError(err, "import")
	}
	return &contactsv1.GetContactImportResponse{ContactImport: toImport(imp)}, nil
}

// StreamRejectedRows streams the rejected rows as CSV: the file's header and a reason column,
// then each row as sent with its reason, in line order.
func (s *Server) StreamRejectedRows(req *contactsv1.StreamRejectedRowsRequest, stream contactsv1.ContactsService_StreamRejectedRowsServer) error {
	ctx := stream.Context()
	org, err := tenant.Org(ctx)
	if err != nil {
		return err
	}
	id, err := pathID(req.GetId(), "import")
	if err != nil {
		return err
	}
	out := &chunkWriter{send: func(b []byte) error {
		return stream.Send(&contactsv1.StreamRejectedRowsResponse{Data: b})
	}}
	w := csv.NewWriter(out)
	var width int
	err = s.store.RejectedRows(ctx, org, id, func(header []string) error {
		width = len(header)
		return w.Write(append(slices.Clone(header), "reason"))
	}, func(cells []string, reason string) error {
		row := make([]string, width+1)
		copy(row, cells)
		row[width] = reason
		if err := w.Write(row); err != nil {
			return err
		}
		if out.buf.Len() >= csvChunk {
			w.Flush()
			return out.flush()
		}
		return nil
	})
	if err != nil {
		return storeError(err, "import")
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return out.flush()
}

// RejectReason is the reason an import row is rejected for a merge error: what a POST of the
// row's fields would have answered. Errors that are not about the row are not reasons.
func RejectReason(err error) (string, bool) {
	var (
		dup  *store.DuplicateError
		over *store.LimitError
	)
	if !errors.Is(err, store.ErrAmbiguous) && !errors.As(err, &dup) && !errors.As(err, &over) {
		return "", false
	}
	st := status.Convert(storeError(err, "contact"))
	return st.Message(), true
}

// layout is an import file's header: where each contact field is, and the custom fields.
type layout struct {
	header []string
	col    map[string]int // known column → index
	custom []int          // indexes of custom-field columns
}

func newLayout(head []string) (*layout, error) {
	l := &layout{header: slices.Clone(head), col: map[string]int{}}
	if len(l.header) > 0 {
		l.header[0] = strings.TrimPrefix(l.header[0], "\uFEFF") // a byte-order mark
	}
	seen := map[string]bool{}
	for i, name := range l.header {
		name = strings.TrimSpace(name)
		l.header[i] = name
		key := strings.ToLower(name)
		if seen[key] {
			return nil, fileError("the column " + strconv.Quote(name) + " appears twice")
		}
		seen[key] = true
		if known := knownColumn(name); known != "" {
			l.col[known] = i
			continue
		}
		if !validCustomKey(name) {
			return nil, fileError("the column " + strconv.Quote(name) + " is no contact field, and custom field names start with a letter, hold only letters, digits and _ and are at most 64 long")
		}
		l.custom = append(l.custom, i)
	}
	if _, ok := l.col[colPhone]; !ok {
		if _, ok := l.col[colEmail]; !ok {
			return nil, fileError("the header needs a phone or an email column: rows are merged on them")
		}
	}
	return l, nil
}

// knownColumn is the contact field a header names (in any case), or "".
func knownColumn(name string) string {
	for _, c := range knownColumns {
		if strings.EqualFold(c, name) {
			return c
		}
	}
	return ""
}

// row validates one data row with the create's rules. An empty cell is a field not sent.
func (l *layout) row(rec []string) store.ImportRow {
	row := store.ImportRow{Cells: slices.Clone(rec)}
	if len(rec) != len(l.header) {
		row.Reason = "the row has " + strconv.Itoa(len(rec)) + " cells; the header has " + strconv.Itoa(len(l.header))
		return row
	}
	cell := func(name string) *string {
		i, ok := l.col[name]
		if !ok || strings.TrimSpace(row.Cells[i]) == "" {
			return nil
		}
		return &row.Cells[i]
	}
	v := newValidator()
	ch := v.created(createFields{
		Phone: cell(colPhone), Email: cell(colEmail), FirstName: cell(colFirstName), LastName: cell(colLastName),
		Address: cell(colAddress), City: cell(colCity), State: cell(colState), Zip: cell(colZip), Timezone: cell(colTimezone),
	})
	if tags := cell(colTags); tags != nil {
		var in []string
		for _, t := range strings.Split(*tags, ";") {
			if t = strings.TrimSpace(t); t != "" {
				in = append(in, t)
			}
		}
		ch.Tags = v.tags("tags", in)
	}
	custom := map[string]any{}
	for _, i := range l.custom {
		if val := strings.TrimSpace(row.Cells[i]); val != "" {
			custom[l.header[i]] = val
		}
	}
	if len(custom) > 0 && v.customValues(custom) {
		ch.CustomFields = custom
	}
	if len(v.fields) == 0 && ch.Phone == nil && ch.Email == nil {
		v.fields.Add("phone", "a row needs a phone or an email to be merged on")
	}
	if len(v.fields) > 0 {
		row.Reason = reasonText(v.fields)
		return row
	}
	row.Changes = ch
	return row
}

// reasonText is a row's validation failures, field by field in name order.
func reasonText(f apierr.Fields) string {
	names := make([]string, 0, len(f))
	for k := range f {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ": " + f[n]
	}
	return strings.Join(parts, "; ")
}

func fileError(msg string) error { return apierr.Validation(apierr.Fields{"file": msg}) }

func isCSVError(err error) bool {
	var pe *csv.ParseError
	return errors.As(err, &pe)
}

// chunkReader reads the file from the stream's chunks.
type chunkReader struct {
	recv func() (*contactsv1.ImportContactsRequest, error)
	buf  []byte
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		req, err := c.recv()
		if err != nil {
			return 0, err // io.EOF at the end of the file
		}
		c.buf = req.GetData()
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

// chunkWriter gathers CSV into chunks for the stream.
type chunkWriter struct {
	buf  strings.Builder
	send func([]byte) error
}

func (c *chunkWriter) Write(p []byte) (int, error) { return c.buf.Write(p) }

func (c *chunkWriter) flush() error {
	if c.buf.Len() == 0 {
		return nil
	}
	b := []byte(c.buf.String())
	c.buf.Reset()
	return c.send(b)
}

func toImport(i store.Import) *contactsv1.ContactImport {
	out := &contactsv1.ContactImport{
		Id: i.ID.String(), Status: i.Status, Total: i.Total, Processed: i.Processed, Created: i.Created,
		Merged: i.Merged, Rejected: i.Rejected, LookupsPending: i.LookupsPending, CreatedAt: timestamppb.New(i.CreatedAt),
	}
	if i.CompletedAt != nil {
		out.CompletedAt = timestamppb.New(*i.CompletedAt)
	}
	return out
}
