package server

import (
	"context"

	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// CountContacts answers the calling organization's contact totals, counted now: analytics
// reports them from here rather than keeping its own copy of every contact's flags.
func (s *Server) CountContacts(ctx context.Context, _ *contactsv1.CountContactsRequest) (*contactsv1.CountContactsResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.store.Totals(ctx, org)
	if err != nil {
		return nil, err
	}
	return &contactsv1.CountContactsResponse{Total: c.Total, Textable: c.Textable, OptedOut: c.OptedOut}, nil
}
