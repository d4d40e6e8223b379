package server

import (
	"context"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// List page sizes of the spec.
const (
	defaultLimit = 50
	maxLimit     = 200
)

// cursorKey is what a list cursor holds: the organization and sort it was made for, and the
// sort value (microseconds, PostgreSQL's precision) and id of the last contact of its page.
// The organization binds it like messaging's thread cursors: another organization's cursor is
// refused, never read as a position in the caller's list.
type cursorKey struct {
	Org  uuid.UUID `json:"o"`
	Sort string    `json:"s"`
	At   int64     `json:"t"`
	ID   string    `json:"i"`
}

// ListContacts pages through the organization's contacts, filtered ad hoc or by a segment.
func (s *Server) ListContacts(ctx context.Context, req *contactsv1.ListContactsRequest) (*contactsv1.ListContactsResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	page, err := s.listPage(ctx, org, req)
	if err != nil {
		return nil, err
	}
	items, more, err := s.store.List(ctx, org, page)
	if err != nil {
		return nil, err
	}
	res := &contactsv1.ListContactsResponse{Limit: int32(page.Limit), HasMore: more, SortBy: string(page.Sort)}
	if wire, ok := appendListItems(make([]byte, 0, listItemsSize(items)), items); ok {
		res.ProtoReflect().SetUnknown(wire) // see wire.go
	} else {
		res.Contacts = toListItems(items)
	}
	if more {
		last := items[len(items)-1]
		at := last.UpdatedAt
		if page.Sort == store.SortCreatedAt {
			at = last.CreatedAt
		}
		next, err := s.cursors.Encode(cursorKey{Org: org, Sort: string(page.Sort), At: at.UnixMicro(), ID: last.ID.String()})
		if err != nil {
			return nil, err
		}
		res.Cursor = next
	}
	if req.GetIncludeTotal() {
		n, err := s.store.Count(ctx, org, page.Filter)
		if err != nil {
			return nil, err
		}
		res.Total = proto.Int32(int32(n))
	}
	return res, nil
}

// listPage validates the paging parameters and resolves the filter: the segment's saved filter
// when segmentId is given (ad-hoc filters are then ignored), else the ad-hoc one.
func (s *Server) listPage(ctx context.Context, org uuid.UUID, req *contactsv1.ListContactsRequest) (store.Page, error) {
	v := newValidator()
	page := store.Page{Limit: defaultLimit, Sort: store.SortUpdatedAt}
	if l := req.GetLimit(); l != nil {
		if l.GetValue() < 1 || l.GetValue() > maxLimit {
			v.fields.Add("limit", "must be between 1 and 200")
		}
		page.Limit = int(l.GetValue())
	}
	if o := req.GetOffset(); o != nil {
		if o.GetValue() < 0 {
			v.fields.Add("offset", "must not be negative")
		}
		page.Offset = int(o.GetValue())
	}
	switch store.Sort(req.GetSortBy()) {
	case "", store.SortUpdatedAt:
	case store.SortCreatedAt:
		page.Sort = store.SortCreatedAt
	default:
		v.fields.Add("sortBy", "must be updated_at or created_at")
	}
	if req.GetCursor() != "" {
		page.After = s.decodeCursor(v, req.GetCursor(), org, page.Sort)
	}
	var segmentID *uuid.UUID
	if req.GetSegmentId() != "" {
		id, err := uuid.Parse(req.GetSegmentId())
		if err != nil {
			v.fields.Add("segmentId", "must be a UUID")
		}
		segmentID = &id
	} else {
		page.Filter = v.filter(listFilterInput(req))
	}
	if err := v.err(); err != nil {
		return store.Page{}, err
	}
	if segmentID != nil {
		seg, err := s.store.GetSegment(ctx, org, *segmentID)
		if err != nil {
			return store.Page{}, storeError(err, "segment")
		}
		page.Filter = seg.Filter
	}
	return page, nil
}

// decodeCursor verifies a cursor and checks it was made for the caller's organization and the
// requested sort. Another organization's cursor gets the same answer as a forged one.
func (s *Server) decodeCursor(v *validator, raw string, org uuid.UUID, sort store.Sort) *store.Key {
	var k cursorKey
	if err := s.cursors.Decode(raw, &k); err != nil || k.Org != org {
		v.fields.Add("cursor", "is not a cursor from a previous response")
		return nil
	}
	if k.Sort != string(sort) {
		v.fields.Add("cursor", "was made for sortBy="+k.Sort)
		return nil
	}
	id, err := uuid.Parse(k.ID)
	if err != nil {
		v.fields.Add("cursor", "is not a cursor from a previous response")
		return nil
	}
	return &store.Key{At: time.UnixMicro(k.At), ID: id}
}
