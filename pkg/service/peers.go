package service

import (
	"fmt"

	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/clients/billing"
	"github.com/chorus-sms/chorus/pkg/clients/campaigns"
	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/clients/messaging"
	"github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/clients/polls"
	"github.com/chorus-sms/chorus/pkg/registry"
)

// Peers are the typed clients of the services a service calls; a field is nil unless its
// registry row needs that service.
type Peers struct {
	Orgs      *orgs.Client
	Contacts  *contacts.Client
	Billing   *billing.Client
	Messaging *messaging.Client
	Campaigns *campaigns.Client
	Polls     *polls.Client
}

// dialPeers connects lazily to every service reg needs, at its address in addrs, acting as
// reg; Close closes the connections. A need without an address, or without a typed client
// here, is an error: a service does not run without its peers.
func (s *Shell) dialPeers(reg registry.Service, addrs registry.Peers) error {
	conns, err := clients.DialNeeds(reg, addrs)
	if err != nil {
		return err
	}
	for _, c := range conns {
		s.Closes(c)
	}
	for _, name := range reg.Needs {
		c := conns[name]
		if c == nil {
			return fmt.Errorf("no address for %s", name)
		}
		switch name {
		case registry.Orgs.Name:
			s.Peers.Orgs = orgs.New(c)
		case registry.Contacts.Name:
			s.Peers.Contacts = contacts.New(c)
		case registry.Billing.Name:
			s.Peers.Billing = billing.New(c)
		case registry.Messaging.Name:
			s.Peers.Messaging = messaging.New(c)
		case registry.Campaigns.Name:
			s.Peers.Campaigns = campaigns.New(c)
		case registry.Polls.Name:
			s.Peers.Polls = polls.New(c)
		default:
			return fmt.Errorf("no client for %s", name)
		}
	}
	return nil
}
