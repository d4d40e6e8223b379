package msgtest

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// fakeContacts is the contacts service as messaging calls it: consent, inbound senders and
// sendability of contacts held in memory.
type fakeContacts struct {
	contactsv1.UnimplementedContactsServiceServer

	mu       sync.Mutex
	contacts map[contactKey]*contact
}

type contactKey struct {
	org   uuid.UUID
	phone string // E.164
}

type contact struct {
	id       uuid.UUID
	optedIn  bool
	textable bool // false while its phone lookup is pending
}

// add gives org an opted-in, textable contact with e164.
func (f *fakeContacts) add(org uuid.UUID, e164 string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.contacts[contactKey{org, e164}] = &contact{id: uuid.New(), optedIn: true, textable: true}
}

// RecordInbound marks the sender's contact textable; an unknown sender gets no contact.
func (f *fakeContacts) RecordInbound(ctx context.Context, req *contactsv1.RecordInboundRequest) (*contactsv1.RecordInboundResponse, error) {
	res := &contactsv1.RecordInboundResponse{}
	err := f.write(ctx, req.GetPhone(), func(_ contactKey, c *contact) {
		if c != nil {
			c.textable = true
			res.Found, res.ContactId = true, c.id.String()
		}
	})
	return res, err
}

// SetConsent records an opt-out or opt-in. An opt-out of an unknown phone creates an
// opted-out contact, its lookup pending; an opt-in of one changes nothing unless it is a
// sign-up (create_if_missing), which creates it opted in. Tags are not kept.
func (f *fakeContacts) SetConsent(ctx context.Context, req *contactsv1.SetConsentRequest) (*contactsv1.SetConsentResponse, error) {
	res := &contactsv1.SetConsentResponse{}
	err := f.write(ctx, req.GetPhone(), func(key contactKey, c *contact) {
		switch {
		case c == nil && req.GetOptedIn() && !req.GetCreateIfMissing():
			return
		case c == nil:
			// The creating change counts as one: an opted-in contact "was" opted out.
			c = &contact{id: uuid.New(), optedIn: !req.GetOptedIn()}
			f.contacts[key] = c
		}
		res.Found, res.ContactId, res.Changed = true, c.id.String(), c.optedIn != req.GetOptedIn()
		c.optedIn = req.GetOptedIn()
		res.IsOptedIn = c.optedIn
	})
	return res, err
}

// CheckSendable answers each phone in request order, ranking the reasons as contacts does:
// consent before textability.
func (f *fakeContacts) CheckSendable(ctx context.Context, req *contactsv1.CheckSendableRequest) (*contactsv1.CheckSendableResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	results := make([]*contactsv1.Sendability, len(req.GetPhones()))
	for i, in := range req.GetPhones() {
		p, err := phone.Normalize(in)
		if err != nil {
			results[i] = &contactsv1.Sendability{Phone: in, Reason: contactsv1.SendableReason_SENDABLE_REASON_INVALID_PHONE}
			continue
		}
		r := &contactsv1.Sendability{Phone: p, Reason: contactsv1.SendableReason_SENDABLE_REASON_NO_CONTACT}
		if c, ok := f.contacts[contactKey{org, p}]; ok {
			r.ContactId = c.id.String()
			switch {
			case !c.optedIn:
				r.Reason = contactsv1.SendableReason_SENDABLE_REASON_OPTED_OUT
			case !c.textable:
				r.Reason = contactsv1.SendableReason_SENDABLE_REASON_LOOKUP_PENDING
			default:
				r.Reason, r.Sendable = contactsv1.SendableReason_SENDABLE_REASON_OK, true
			}
		}
		results[i] = r
	}
	return &contactsv1.CheckSendableResponse{Results: results}, nil
}

// write runs fn under the fake's lock on the caller's contact with p (nil when there is none),
// as contacts does a write: write access required, the phone normalized.
func (f *fakeContacts) write(ctx context.Context, p string, fn func(key contactKey, c *contact)) error {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return err
	}
	e164, err := phone.Normalize(p)
	if err != nil {
		return apierr.Field("phone", "must be a phone number")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := contactKey{org, e164}
	fn(key, f.contacts[key])
	return nil
}

// consent says whether org's contact with e164 is opted in, and whether it has one.
func (f *fakeContacts) consent(org uuid.UUID, e164 string) (optedIn, found bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.contacts[contactKey{org, e164}]
	return ok && c.optedIn, ok
}
