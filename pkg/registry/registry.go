// Package registry is the one table of Chorus's processes: each one's name, default address,
// the variable that names that address, and the services it calls. The all-in-one stack starts
// from it, every process and chorusctl take their peers' default addresses from it, and a
// test holds the Kubernetes manifests to it, so a port is written here and nowhere else.
//
// The constructors are not here: pkg is imported by the services, so it cannot import them.
// The stack module keeps one constructor per row, keyed by Name, and tests that none is
// missing.
package registry

import (
	"time"

	"github.com/chorus-sms/chorus/pkg/envconfig"
)

// Protocol is what a process serves on its listener.
type Protocol string

// The protocols of Chorus's processes; each is also the name of the listening port in the
// process's Deployment.
const (
	GRPC Protocol = "grpc" // internal services
	HTTP Protocol = "http" // the public REST gateway
)

// ListenVar is the variable a process of this protocol reads its listen address from when it
// runs on its own: CHORUS_GRPC_ADDR or CHORUS_HTTP_ADDR.
func (p Protocol) ListenVar() string {
	if p == HTTP {
		return "CHORUS_HTTP_ADDR"
	}
	return "CHORUS_GRPC_ADDR"
}

// Service is one row of the registry.
type Service struct {
	// Name is the Deployment, Service and container name, and the key of the stack's
	// constructor.
	Name     string
	Protocol Protocol
	// Addr is the default address, distinct per service so that every binary can run on one
	// machine. In Kubernetes the host is the Service's name and the port is the same.
	Addr string
	// AddrVar names the address to the processes that call this one, and to the all-in-one
	// stack, which listens on it.
	AddrVar string
	// OpsPort is where /healthz, /readyz and /metrics answer in Kubernetes (CHORUS_OPS_ADDR);
	// zero when they are served on the main listener, as the gateway does.
	OpsPort int
	// Needs names the services this one calls; the stack starts them first and gives this one
	// their addresses.
	Needs []string
	// Main is the directory of the process's own binary, from the repository root; `make
	// images` builds one image from each.
	Main string
	// Drain bounds how long the process takes to stop once its listener has stopped taking
	// calls: running jobs and dispatches, or the gateway's in-flight requests. A pod's
	// termination grace period must be longer (the manifests test holds them to it).
	Drain time.Duration
}

// drain is every process's bound on stopping: River's and the dispatcher's stop, the
// gateway's in-flight requests.
const drain = 15 * time.Second

// opsPort is where a service's ops endpoints answer in its pod.
const opsPort = 9464

// The rows. A new service is one more row here, added to All after the services it needs.
var (
	Orgs = Service{
		Name: "orgs", Protocol: GRPC, Addr: "127.0.0.1:9101", AddrVar: "CHORUS_ORGS_ADDR", OpsPort: opsPort,
		Main: "services/orgs/cmd/orgs", Drain: drain,
	}
	Contacts = Service{
		Name: "contacts", Protocol: GRPC, Addr: "127.0.0.1:9102", AddrVar: "CHORUS_CONTACTS_ADDR", OpsPort: opsPort,
		Main: "services/contacts/cmd/contacts", Drain: drain,
	}
	Billing = Service{
		Name: "billing", Protocol: GRPC, Addr: "127.0.0.1:9107", AddrVar: "CHORUS_BILLING_ADDR", OpsPort: opsPort,
		Main: "services/billing/cmd/billing", Drain: drain,
	}
	Messaging = Service{
		Name: "messaging", Protocol: GRPC, Addr: "127.0.0.1:9103", AddrVar: "CHORUS_MESSAGING_ADDR", OpsPort: opsPort,
		Needs: []string{Orgs.Name, Contacts.Name, Billing.Name},
		Main:  "services/messaging/cmd/messaging", Drain: drain,
	}
	Campaigns = Service{
		Name: "campaigns", Protocol: GRPC, Addr: "127.0.0.1:9104", AddrVar: "CHORUS_CAMPAIGNS_ADDR", OpsPort: opsPort,
		Needs: []string{Orgs.Name, Contacts.Name, Billing.Name, Messaging.Name},
		Main:  "services/campaigns/cmd/campaigns", Drain: drain,
	}
	Polls = Service{
		Name: "polls", Protocol: GRPC, Addr: "127.0.0.1:9105", AddrVar: "CHORUS_POLLS_ADDR", OpsPort: opsPort,
		Needs: []string{Orgs.Name, Contacts.Name, Billing.Name, Messaging.Name},
		Main:  "services/polls/cmd/polls", Drain: drain,
	}
	Analytics = Service{
		Name: "analytics", Protocol: GRPC, Addr: "127.0.0.1:9106", AddrVar: "CHORUS_ANALYTICS_ADDR", OpsPort: opsPort,
		Needs: []string{Orgs.Name, Contacts.Name},
		Main:  "services/analytics/cmd/analytics", Drain: drain,
	}
	Webhooks = Service{
		Name: "webhooks", Protocol: GRPC, Addr: "127.0.0.1:9108", AddrVar: "CHORUS_WEBHOOKS_ADDR", OpsPort: opsPort,
		Needs: []string{Contacts.Name, Messaging.Name, Campaigns.Name, Polls.Name},
		Main:  "services/webhooks/cmd/webhooks", Drain: drain,
	}
	Gateway = Service{
		Name: "gateway", Protocol: HTTP, Addr: "127.0.0.1:8080", AddrVar: "CHORUS_HTTP_ADDR",
		Needs: []string{Orgs.Name, Contacts.Name, Billing.Name, Messaging.Name, Campaigns.Name, Polls.Name, Analytics.Name, Webhooks.Name},
		Main:  "gateway/cmd/gateway", Drain: drain,
	}
)

// All is every row in start order: each comes after the services it needs (TestStartOrder).
var All = []Service{Orgs, Contacts, Billing, Messaging, Campaigns, Polls, Analytics, Webhooks, Gateway}

// Named is the row called name; ok is false when there is none.
func Named(name string) (s Service, ok bool) {
	for _, s := range All {
		if s.Name == name {
			return s, true
		}
	}
	return Service{}, false
}

// Peers is where a process reaches the services it calls: an address by registry Name. One map
// carries every peer, so a service that comes to need another gains a row of Needs, not a field.
type Peers map[string]string

// PeersFrom is where s reaches each service it needs: that service's AddrVar, else its default.
func (s Service) PeersFrom(r *envconfig.Reader) Peers {
	p := make(Peers, len(s.Needs))
	for _, name := range s.Needs {
		peer, _ := Named(name) // a row, listed before s (TestStartOrder)
		p[name] = peer.AddrFrom(r)
	}
	return p
}

// AddrFrom is where callers reach the service: AddrVar, else the default.
func (s Service) AddrFrom(r *envconfig.Reader) string { return r.String(s.AddrVar, s.Addr) }

// ListenFrom is where the service's own binary listens: its protocol's ListenVar, else the
// default.
func (s Service) ListenFrom(r *envconfig.Reader) string {
	return r.String(s.Protocol.ListenVar(), s.Addr)
}
