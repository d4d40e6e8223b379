package server

import (
	"fmt"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// Batch sizes of StreamAudience.
const (
	defaultAudienceBatch = 500
	maxAudienceBatch     = 1000
)

// StreamAudience streams the sendable contacts of a segment or an ad-hoc filter in batches,
// by id, so a caller holds one batch at a time and can resume after the last id it stored.
// Another organization's segment is NOT_FOUND, as a missing one.
func (s *Server) StreamAudience(req *contactsv1.StreamAudienceRequest, stream contactsv1.ContactsService_StreamAudienceServer) error {
	ctx := stream.Context()
	org, err := tenant.Org(ctx)
	if err != nil {
		return err
	}
	v := newValidator()
	size := int(req.GetBatchSize())
	switch {
	case size == 0:
		size = defaultAudienceBatch
	case size < 0 || size > maxAudienceBatch:
		v.fields.Add("batchSize", fmt.Sprintf("must be between 1 and %d", maxAudienceBatch))
	}
	after := uuid.Nil
	if raw := req.GetAfterContactId(); raw != "" {
		if after, err = uuid.Parse(raw); err != nil {
			v.fields.Add("afterContactId", "must be a UUID")
		}
	}
	var filter store.Filter
	switch {
	case (req.GetSegmentId() == "") == (req.GetFilter() == nil):
		v.fields.Add("segmentId", "exactly one of segmentId and filter is required")
	case req.GetFilter() != nil:
		filter = v.filter(segmentFilterInput(req.GetFilter()))
	}
	if err := v.err(); err != nil {
		return err
	}
	if req.GetSegmentId() != "" {
		id, err := uuid.Parse(req.GetSegmentId())
		if err != nil {
			return apierr.NotFound("segment not found")
		}
		seg, err := s.store.GetSegment(ctx, org, id)
		if err != nil {
			return storeError(err, "segment")
		}
		filter = seg.Filter
	}
	for {
		batch, err := s.store.AudienceBatch(ctx, org, filter, after, size)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		resp := &contactsv1.StreamAudienceResponse{Members: make([]*contactsv1.AudienceMember, len(batch))}
		for i, c := range batch {
			var fields *structpb.Struct // none: most contacts have no custom fields
			if len(c.CustomFields) > 0 {
				if fields, err = structpb.NewStruct(c.CustomFields); err != nil {
					return fmt.Errorf("custom fields of contact %s: %w", c.ID, err)
				}
			}
			resp.Members[i] = &contactsv1.AudienceMember{
				ContactId: c.ID.String(), Phone: c.Phone, FirstName: c.FirstName, LastName: c.LastName,
				Email: deref(c.Email), Address: c.Address, City: c.City, State: c.State, Zip: c.Zip,
				Timezone: c.Timezone, CustomFields: fields,
			}
		}
		if err := stream.Send(resp); err != nil {
			return fmt.Errorf("send audience batch: %w", err)
		}
		if len(batch) < size {
			return nil
		}
		after = batch[len(batch)-1].ID
	}
}
