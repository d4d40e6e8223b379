package stack

import (
	"context"
	"log/slog"
	"slices"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/devauth"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/analytics"
	"github.com/chorus-sms/chorus/services/billing"
	"github.com/chorus-sms/chorus/services/campaigns"
	"github.com/chorus-sms/chorus/services/contacts"
	"github.com/chorus-sms/chorus/services/messaging"
	"github.com/chorus-sms/chorus/services/orgs"
	"github.com/chorus-sms/chorus/services/polls"
	"github.com/chorus-sms/chorus/services/webhooks"
)

// Config is the whole stack's configuration, read from the same CHORUS_* variables the
// separate binaries read.
type Config struct {
	Orgs      orgs.Config
	Contacts  contacts.Config
	Billing   billing.Config
	Messaging messaging.Config
	Campaigns campaigns.Config
	Polls     polls.Config
	Analytics analytics.Config
	Webhooks  webhooks.Config
	Gateway   gateway.Config
	// Addrs is where each registry service listens, by name, from its AddrVar (port 0 picks a
	// free port). Each service's peers (its Config's Peers) are set from the actual
	// listeners.
	Addrs map[string]string
	// Services names the registry services this process runs (CHORUS_STACK_SERVICES, comma
	// separated); empty runs them all. The others are reached at their Addrs, served by other
	// processes, as in Kubernetes: the fault tests run campaigns and messaging in processes
	// they kill while the rest stays up.
	Services []string
	// DevKeyPath is the PEM key of the local identity provider (CHORUS_DEV_KEY).
	DevKeyPath string
	// JWKSAddr is where the local identity provider publishes its JWKS (CHORUS_DEV_JWKS_ADDR).
	JWKSAddr string
	// DevIdentity points the gateway at the local identity provider; it is true when
	// CHORUS_JWT_JWKS_URL is unset.
	DevIdentity bool
	// LocalPublicURL makes the gateway's own listener the public URL messaging signs webhooks
	// and builds links with; it is true when CHORUS_PUBLIC_URL is unset.
	LocalPublicURL bool
	Logger         *slog.Logger
}

// ConfigFromEnv reads every service's variables. The gateway is pointed at the local identity
// provider unless CHORUS_JWT_JWKS_URL names another one.
func ConfigFromEnv(r *envconfig.Reader) Config {
	c := Config{
		Orgs:           orgs.ConfigFromEnv(r),
		Contacts:       contacts.ConfigFromEnv(r),
		Billing:        billing.ConfigFromEnv(r),
		Messaging:      messaging.ConfigFromEnv(r),
		Campaigns:      campaigns.ConfigFromEnv(r),
		Polls:          polls.ConfigFromEnv(r),
		Analytics:      analytics.ConfigFromEnv(r),
		Webhooks:       webhooks.ConfigFromEnv(r),
		DevKeyPath:     r.String("CHORUS_DEV_KEY", ".run/dev-key.pem"),
		JWKSAddr:       r.String("CHORUS_DEV_JWKS_ADDR", "127.0.0.1:8090"),
		DevIdentity:    r.String("CHORUS_JWT_JWKS_URL", "") == "",
		LocalPublicURL: r.String("CHORUS_PUBLIC_URL", "") == "",
		Addrs:          make(map[string]string, len(registry.All)),
	}
	for _, svc := range registry.All {
		c.Addrs[svc.Name] = svc.AddrFrom(r)
	}
	names := make([]string, len(registry.All))
	for i, svc := range registry.All {
		names[i] = svc.Name
	}
	c.Services = r.SomeOf("CHORUS_STACK_SERVICES", names...)
	if c.DevIdentity {
		r = r.WithDefaults(map[string]string{
			"CHORUS_JWT_JWKS_URL": jwksURL(c.JWKSAddr),
			"CHORUS_JWT_ISSUER":   devauth.Issuer,
			"CHORUS_JWT_AUDIENCE": devauth.Audience,
		})
	}
	c.Gateway = gateway.ConfigFromEnv(r)
	return c
}

// runs says whether this process runs svc.
func (c *Config) runs(svc registry.Service) bool {
	return len(c.Services) == 0 || slices.Contains(c.Services, svc.Name)
}

func jwksURL(addr string) string { return "http://" + addr + "/.well-known/jwks.json" }

// constructor builds one registry service from the stack's configuration. peers holds, by
// name, the listening addresses of the services the registry says it needs.
type constructor func(ctx context.Context, cfg *Config, peers registry.Peers, log *slog.Logger) (process.Server, error)

// constructors completes the registry's rows, which pkg/registry cannot hold because the
// services import pkg. TestEveryServiceHasAConstructor keeps the two in step.
var constructors = map[string]constructor{
	registry.Orgs.Name:      wired(func(c *Config) orgs.Config { return c.Orgs }, orgs.New),
	registry.Contacts.Name:  wired(func(c *Config) contacts.Config { return c.Contacts }, contacts.New),
	registry.Billing.Name:   wired(func(c *Config) billing.Config { return c.Billing }, billing.New),
	registry.Messaging.Name: wired(func(c *Config) messaging.Config { return c.Messaging }, messaging.New),
	registry.Campaigns.Name: wired(func(c *Config) campaigns.Config { return c.Campaigns }, campaigns.New),
	registry.Polls.Name:     wired(func(c *Config) polls.Config { return c.Polls }, polls.New),
	registry.Analytics.Name: wired(func(c *Config) analytics.Config { return c.Analytics }, analytics.New),
	registry.Webhooks.Name:  wired(func(c *Config) webhooks.Config { return c.Webhooks }, webhooks.New),
	registry.Gateway.Name:   wired(func(c *Config) gateway.Config { return c.Gateway }, gateway.New),
}

// wired is the constructor that builds a service from its part of the stack's configuration
// (pick), given the stack's logger and its peers' listeners.
func wired[C any, W process.Wirable[C], S process.Server](pick func(*Config) C, build func(context.Context, C) (S, error)) constructor {
	return func(ctx context.Context, cfg *Config, peers registry.Peers, log *slog.Logger) (process.Server, error) {
		c := pick(cfg)
		W(&c).Wire(peers, log)
		return build(ctx, c)
	}
}
