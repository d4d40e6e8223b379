package stack

import (
	"context"
	"log/slog"

	"github.com/chorus-sms/chorus/gateway"
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
