// Package peers holds messaging's clients of the services it depends on: orgs (timezone,
// sandbox flag, short-link base, help text), contacts (consent and sendability) and billing
// (credits). Calls are made as the messaging service acting for one organization.
package peers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"

	"github.com/chorus-sms/chorus/pkg/rpcclient"
	"github.com/chorus-sms/chorus/pkg/tenant"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// ServiceUser is the user the messaging service acts as on calls to other services.
const ServiceUser = "service:messaging"

// orgTTL bounds how stale an organization's settings may be; they change rarely and every
// message needs them.
const orgTTL = 30 * time.Second

// Peers are the client connections of the messaging service.
type Peers struct {
	Orgs     orgsv1.OrgsServiceClient
	Contacts contactsv1.ContactsServiceClient
	Billing  billingv1.BillingServiceClient
	conns    []*grpc.ClientConn

	mu   sync.Mutex
	orgs map[uuid.UUID]cachedOrg
}

type cachedOrg struct {
	org *orgsv1.Organization
	at  time.Time
}

// Dial connects lazily to the three services.
func Dial(orgsAddr, contactsAddr, billingAddr string) (*Peers, error) {
	p := &Peers{orgs: map[uuid.UUID]cachedOrg{}}
	for _, c := range []struct{ name, addr string }{{"orgs", orgsAddr}, {"contacts", contactsAddr}, {"billing", billingAddr}} {
		conn, err := rpcclient.Dial(c.name, c.addr)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.conns = append(p.conns, conn)
	}
	p.Orgs = orgsv1.NewOrgsServiceClient(p.conns[0])
	p.Contacts = contactsv1.NewContactsServiceClient(p.conns[1])
	p.Billing = billingv1.NewBillingServiceClient(p.conns[2])
	return p, nil
}

// Close closes the connections.
func (p *Peers) Close() {
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// For returns ctx carrying the messaging service as a writer of org, for calls to contacts
// and billing; the caller's request id, if any, is kept.
func For(ctx context.Context, org uuid.UUID) context.Context {
	reqID := ""
	if p, ok := tenant.FromContext(ctx); ok {
		reqID = p.RequestID
	}
	return tenant.AppendToOutgoing(ctx, tenant.Principal{OrgID: org, User: ServiceUser, Access: tenant.AccessWrite, RequestID: reqID})
}

// Org returns the organization's settings, cached for a few seconds.
func (p *Peers) Org(ctx context.Context, id uuid.UUID) (*orgsv1.Organization, error) {
	p.mu.Lock()
	c, ok := p.orgs[id]
	p.mu.Unlock()
	if ok && time.Since(c.at) < orgTTL {
		return c.org, nil
	}
	resp, err := p.Orgs.GetOrganization(ctx, &orgsv1.GetOrganizationRequest{Id: id.String()})
	if err != nil {
		return nil, fmt.Errorf("get organization %s: %w", id, err)
	}
	p.mu.Lock()
	p.orgs[id] = cachedOrg{org: resp.GetOrganization(), at: time.Now()}
	p.mu.Unlock()
	return resp.GetOrganization(), nil
}
