// Package contacts is the typed client of the contacts service: consent, sendability and
// contact search, called by a service acting for one organization.
package contacts

import (
	"context"
	"errors"
	"io"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/clients"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// Client calls the contacts service.
type Client struct {
	clients.Client[contactsv1.ContactsServiceClient]
}

// New returns a client over conn.
func New(conn *clients.Conn) *Client {
	return &Client{Client: clients.NewClient(conn, contactsv1.NewContactsServiceClient)}
}

// Dial connects lazily to the contacts service at addr on behalf of caller.
func Dial(addr, caller string) (*Client, error) {
	conn, err := clients.Dial("contacts", addr, caller)
	if err != nil {
		return nil, err
	}
	return New(conn), nil
}

// CheckSendable says, per phone, what org's contacts know of it (consent, textability).
func (c *Client) CheckSendable(ctx context.Context, org uuid.UUID, phones []string) ([]*contactsv1.Sendability, error) {
	resp, err := clients.Call(ctx, c.Conn(), "CheckSendable", clients.Idempotent, func(ctx context.Context) (*contactsv1.CheckSendableResponse, error) {
		return c.Stub.CheckSendable(c.Conn().For(ctx, org), &contactsv1.CheckSendableRequest{Phones: phones})
	})
	return resp.GetResults(), err
}

// Count returns org's contact totals (all, textable, opted out).
func (c *Client) Count(ctx context.Context, org uuid.UUID) (*contactsv1.CountContactsResponse, error) {
	return clients.Call(ctx, c.Conn(), "CountContacts", clients.Idempotent, func(ctx context.Context) (*contactsv1.CountContactsResponse, error) {
		return c.Stub.CountContacts(c.Conn().For(ctx, org), &contactsv1.CountContactsRequest{})
	})
}

// ListContacts pages through org's contacts.
func (c *Client) ListContacts(ctx context.Context, org uuid.UUID, req *contactsv1.ListContactsRequest) (*contactsv1.ListContactsResponse, error) {
	return clients.Call(ctx, c.Conn(), "ListContacts", clients.Idempotent, func(ctx context.Context) (*contactsv1.ListContactsResponse, error) {
		return c.Stub.ListContacts(c.Conn().For(ctx, org), req)
	})
}

// SetConsent records an opt-in or opt-out of a phone. It is not retried: each call is an
// event in the contact's consent history.
func (c *Client) SetConsent(ctx context.Context, org uuid.UUID, req *contactsv1.SetConsentRequest) (*contactsv1.SetConsentResponse, error) {
	return clients.Call(ctx, c.Conn(), "SetConsent", clients.Once, func(ctx context.Context) (*contactsv1.SetConsentResponse, error) {
		return c.Stub.SetConsent(c.Conn().For(ctx, org), req)
	})
}

// RecordInbound records that a phone texted org and returns its contact, if any. It is not
// retried: each call counts one inbound message.
func (c *Client) RecordInbound(ctx context.Context, org uuid.UUID, phone string) (*contactsv1.RecordInboundResponse, error) {
	return clients.Call(ctx, c.Conn(), "RecordInbound", clients.Once, func(ctx context.Context) (*contactsv1.RecordInboundResponse, error) {
		return c.Stub.RecordInbound(c.Conn().For(ctx, org), &contactsv1.RecordInboundRequest{Phone: phone})
	})
}

// Get returns org's contact id as the API shows it. Another organization's contact is a
// *clients.Error matching clients.ErrNotFound, as a missing one.
func (c *Client) Get(ctx context.Context, org uuid.UUID, id string) (*contactsv1.Contact, error) {
	resp, err := clients.Call(ctx, c.Conn(), "GetContact", clients.Idempotent, func(ctx context.Context) (*contactsv1.GetContactResponse, error) {
		return c.Stub.GetContact(c.Conn().For(ctx, org), &contactsv1.GetContactRequest{Id: id})
	})
	return resp.GetContact(), err
}

// Segment returns org's segment id. Another organization's segment is a *clients.Error
// matching clients.ErrNotFound, as a missing one.
func (c *Client) Segment(ctx context.Context, org uuid.UUID, id string) (*contactsv1.Segment, error) {
	resp, err := clients.Call(ctx, c.Conn(), "GetSegment", clients.Idempotent, func(ctx context.Context) (*contactsv1.GetSegmentResponse, error) {
		return c.Stub.GetSegment(c.Conn().For(ctx, org), &contactsv1.GetSegmentRequest{Id: id})
	})
	return resp.GetSegment(), err
}

// Audience streams org's sendable contacts of req's segment or filter in batches by contact
// id, calling batch for each; an error batch returns ends the stream with that error. A
// segment of another organization is a *clients.Error matching clients.ErrNotFound.
func (c *Client) Audience(ctx context.Context, org uuid.UUID, req *contactsv1.StreamAudienceRequest, batch func([]*contactsv1.AudienceMember) error) error {
	return clients.Stream(ctx, c.Conn(), "StreamAudience", func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // a batch that fails stops the server's stream too
		stream, err := c.Stub.StreamAudience(c.Conn().For(ctx, org), req)
		if err != nil {
			return err
		}
		for {
			resp, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := batch(resp.GetMembers()); err != nil {
				return err
			}
		}
	})
}
