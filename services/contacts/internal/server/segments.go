package server

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// maxSegmentName bounds a segment's name, like the spec's other names.
const maxSegmentName = 200

// segmentName trims and checks a name.
func (v *validator) segmentName(name string) string {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > maxSegmentName {
		v.fields.Add("name", "required, at most 200 characters")
	}
	return name
}

// ListSegments lists the organization's segments, newest first.
func (s *Server) ListSegments(ctx context.Context, _ *contactsv1.ListSegmentsRequest) (*contactsv1.ListSegmentsResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	segs, err := s.store.ListSegments(ctx, org)
	if err != nil {
		return nil, err
	}
	res := &contactsv1.ListSegmentsResponse{Segments: make([]*contactsv1.Segment, len(segs))}
	for i, seg := range segs {
		res.Segments[i] = toSegment(seg)
	}
	return res, nil
}

// CreateSegment saves a filter under a name unique in the organization.
func (s *Server) CreateSegment(ctx context.Context, req *contactsv1.CreateSegmentRequest) (*contactsv1.CreateSegmentResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	v := newValidator()
	name := v.segmentName(req.GetName())
	f := v.filter(segmentFilterInput(req.GetFilter()))
	if err := v.err(); err != nil {
		return nil, err
	}
	seg, err := s.store.CreateSegment(ctx, org, name, f)
	if err != nil {
		return nil, storeError(err, "segment")
	}
	httpcode.Set(ctx, 201)
	return &contactsv1.CreateSegmentResponse{Segment: toSegment(seg)}, nil
}

// GetSegment returns one segment.
func (s *Server) GetSegment(ctx context.Context, req *contactsv1.GetSegmentRequest) (*contactsv1.GetSegmentResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetId(), "segment")
	if err != nil {
		return nil, err
	}
	seg, err := s.store.GetSegment(ctx, org, id)
	if err != nil {
		return nil, storeError(err, "segment")
	}
	return &contactsv1.GetSegmentResponse{Segment: toSegment(seg)}, nil
}

// UpdateSegment renames a segment and/or replaces its whole filter.
func (s *Server) UpdateSegment(ctx context.Context, req *contactsv1.UpdateSegmentRequest) (*contactsv1.UpdateSegmentResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetId(), "segment")
	if err != nil {
		return nil, err
	}
	v := newValidator()
	var (
		name *string
		f    *store.Filter
	)
	if req.Name != nil {
		n := v.segmentName(req.GetName())
		name = &n
	}
	if req.Filter != nil {
		sf := v.filter(segmentFilterInput(req.GetFilter()))
		f = &sf
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	seg, err := s.store.UpdateSegment(ctx, org, id, name, f)
	if err != nil {
		return nil, storeError(err, "segment")
	}
	return &contactsv1.UpdateSegmentResponse{Segment: toSegment(seg)}, nil
}

// DeleteSegment removes a segment.
func (s *Server) DeleteSegment(ctx context.Context, req *contactsv1.DeleteSegmentRequest) (*contactsv1.DeleteSegmentResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetId(), "segment")
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteSegment(ctx, org, id); err != nil {
		return nil, storeError(err, "segment")
	}
	return &contactsv1.DeleteSegmentResponse{Id: id.String(), Deleted: true}, nil
}
