package server

import (
	"context"
	"encoding/csv"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/csvguard"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// Bounds of the consent history's requests.
const (
	maxNoteLen          = 500
	defaultExportWindow = 30 * 24 * time.Hour
)

// historyCursor is what a consent history cursor holds: the organization and contact it was
// made for, and the recorded time (microseconds) and id of the last entry of its page.
type historyCursor struct {
	Org     uuid.UUID `json:"o"`
	Contact uuid.UUID `json:"c"`
	At      int64     `json:"t"`
	ID      uuid.UUID `json:"i"`
}

// ListConsentHistory answers a page of a contact's consent history, newest first.
func (s *Server) ListConsentHistory(ctx context.Context, req *contactsv1.ListConsentHistoryRequest) (*contactsv1.ListConsentHistoryResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetId(), "contact")
	if err != nil {
		return nil, err
	}
	v := newValidator()
	limit := defaultLimit
	if l := req.GetLimit(); l != nil {
		if l.GetValue() < 1 || l.GetValue() > maxLimit {
			v.fields.Add("limit", "must be between 1 and 200")
		}
		limit = int(l.GetValue())
	}
	var before *store.HistoryKey
	if raw := req.GetCursor(); raw != "" {
		var k historyCursor
		if err := s.cursors.Decode(raw, &k); err != nil || k.Org != org || k.Contact != id {
			v.fields.Add("cursor", "is not a cursor from a previous response")
		}
		before = &store.HistoryKey{At: time.UnixMicro(k.At), ID: k.ID}
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	entries, more, err := s.store.ConsentHistory(ctx, org, id, before, limit)
	if err != nil {
		return nil, storeError(err, "contact")
	}
	res := &contactsv1.ListConsentHistoryResponse{Entries: make([]*contactsv1.ConsentEntry, len(entries)), HasMore: more}
	for i, e := range entries {
		res.Entries[i] = toConsentEntry(e)
	}
	if more {
		last := entries[len(entries)-1]
		if res.Cursor, err = s.cursors.Encode(historyCursor{Org: org, Contact: id, At: last.RecordedAt.UnixMicro(), ID: last.ID}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func toConsentEntry(e store.ConsentEntry) *contactsv1.ConsentEntry {
	out := &contactsv1.ConsentEntry{
		OccurredAt: timestamppb.New(e.OccurredAt), RecordedAt: timestamppb.New(e.RecordedAt),
		OptedIn: e.OptedIn, Source: e.Source, Detail: optString(e.Detail), MessageId: optString(e.MessageID),
		MessageText: optString(e.MessageText), User: optString(e.User),
	}
	if e.ImportID != nil {
		out.ImportId = wrapperspb.String(e.ImportID.String())
	}
	return out
}

// optString is s as a nullable field: null when empty.
func optString(s string) *wrapperspb.StringValue {
	if s == "" {
		return nil
	}
	return wrapperspb.String(s)
}

// OptOutContact records an opt-out a person asked for by other means than a text (the FCC lets
// consent be revoked "by any reasonable means"), as the calling user. There is no opt-in
// counterpart: consent is given by the phone's owner, by text.
func (s *Server) OptOutContact(ctx context.Context, req *contactsv1.OptOutContactRequest) (*contactsv1.OptOutContactResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetId(), "contact")
	if err != nil {
		return nil, err
	}
	note := strings.TrimSpace(req.GetNote())
	if utf8.RuneCountInString(note) > maxNoteLen {
		return nil, apierr.Field("note", "at most "+strconv.Itoa(maxNoteLen)+" characters")
	}
	p, _ := tenant.FromContext(ctx)
	_, err = s.store.SetConsent(ctx, org, store.ConsentChange{
		ContactID: id, OccurredAt: time.Now(),
		Origin: store.Origin{Source: store.SourceAPI, Detail: note, User: p.User},
	}, s.lookups)
	if err != nil {
		return nil, storeError(err, "contact")
	}
	c, err := s.store.Get(ctx, org, id)
	if err != nil {
		return nil, storeError(err, "contact")
	}
	pc, err := toContact(c)
	if err != nil {
		return nil, err
	}
	return &contactsv1.OptOutContactResponse{Contact: pc}, nil
}

// exportHeader is the consent export's header row.
var exportHeader = []string{"contactId", "phone", "occurredAt", "optedIn", "source", "detail", "messageId", "messageText", "user", "importId"}

// ExportConsent streams the organization's consent history that occurred in the range as CSV,
// oldest first. Only the range is validated before the first chunk, so a refusal is the call's
// status and a failure later ends a stream the gateway then aborts.
func (s *Server) ExportConsent(req *contactsv1.ExportConsentRequest, stream contactsv1.ContactsService_ExportConsentServer) error {
	ctx := stream.Context()
	org, err := tenant.Org(ctx)
	if err != nil {
		return err
	}
	from, to, err := exportRange(req.GetStart(), req.GetEnd(), time.Now())
	if err != nil {
		return err
	}
	out := &chunkWriter{send: func(b []byte) error {
		return stream.Send(&contactsv1.ExportConsentResponse{Data: b})
	}}
	w := csv.NewWriter(out)
	w.UseCRLF = true
	if err := w.Write(exportHeader); err != nil {
		return err
	}
	row := make([]string, len(exportHeader))
	err = s.store.ExportConsent(ctx, org, from, to, func(e store.ConsentEntry) error {
		row[0], row[1], row[2] = e.ContactID.String(), "", e.OccurredAt.UTC().Format(time.RFC3339Nano)
		if e.Phone != nil {
			row[1] = *e.Phone
		}
		row[3], row[4], row[5] = strconv.FormatBool(e.OptedIn), e.Source, csvguard.Cell(e.Detail)
		row[6], row[7], row[8], row[9] = csvguard.Cell(e.MessageID), csvguard.Cell(e.MessageText), csvguard.Cell(e.User), ""
		if e.ImportID != nil {
			row[9] = e.ImportID.String()
		}
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
		return err
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return out.flush()
}

// exportRange reads the export's range: each bound a UTC date (start from its beginning, end
// through its end) or an RFC 3339 time; end defaults to now and start to 30 days before end.
// The range is [from, to).
func exportRange(start, end string, now time.Time) (from, to time.Time, err error) {
	v := newValidator()
	to = now
	if end != "" {
		t, isDate, ok := readTime(end)
		switch {
		case !ok:
			v.fields.Add("end", "must be a date (YYYY-MM-DD) or an RFC 3339 time")
		case isDate:
			to = t.AddDate(0, 0, 1)
		default:
			to = t
		}
	}
	from = to.Add(-defaultExportWindow)
	if start != "" {
		t, _, ok := readTime(start)
		if !ok {
			v.fields.Add("start", "must be a date (YYYY-MM-DD) or an RFC 3339 time")
		}
		from = t
	}
	if err := v.err(); err != nil {
		return time.Time{}, time.Time{}, err
	}
	if !to.After(from) {
		v.fields.Add("end", "must be after start")
		return time.Time{}, time.Time{}, v.err()
	}
	return from, to, nil
}

// readTime reads s as a UTC date or an RFC 3339 time.
func readTime(s string) (t time.Time, isDate, ok bool) {
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d, true, true
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, false, true
	}
	return time.Time{}, false, false
}
