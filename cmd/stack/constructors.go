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
)

// constructor builds one registry service from the stack's configuration. peers holds, by
// name, the listening addresses of the services the registry says it needs.
type constructor func(ctx context.Context, cfg *Config, peers map[string]string, log *slog.Logger) (process.Server, error)

// constructors completes the registry's rows, which pkg/registry cannot hold because the
// services import pkg. TestEveryServiceHasAConstructor keeps the two in step.
var constructors = map[string]constructor{
	registry.Orgs.Name: func(ctx context.Context, cfg *Config, _ map[string]string, log *slog.Logger) (process.Server, error) {
		c := cfg.Orgs
		c.Logger = log
		return orgs.New(ctx, c)
	},
	registry.Contacts.Name: func(ctx context.Context, cfg *Config, _ map[string]string, log *slog.Logger) (process.Server, error) {
		c := cfg.Contacts
		c.Logger = log
		return contacts.New(ctx, c)
	},
	registry.Billing.Name: func(ctx context.Context, cfg *Config, _ map[string]string, log *slog.Logger) (process.Server, error) {
		c := cfg.Billing
		c.Logger = log
		return billing.New(ctx, c)
	},
	registry.Messaging.Name: func(ctx context.Context, cfg *Config, peers map[string]string, log *slog.Logger) (process.Server, error) {
		c := cfg.Messaging
		c.Logger = log
		c.OrgsAddr = peers[registry.Orgs.Name]
		c.ContactsAddr = peers[registry.Contacts.Name]
		c.BillingAddr = peers[registry.Billing.Name]
		return messaging.New(ctx, c)
	},
	registry.Campaigns.Name: func(ctx context.Context, cfg *Config, peers map[string]string, log *slog.Logger) (process.Server, error) {
		c := cfg.Campaigns
		c.Logger = log
		c.OrgsAddr = peers[registry.Orgs.Name]
		c.ContactsAddr = peers[registry.Contacts.Name]
		c.BillingAddr = peers[registry.Billing.Name]
		c.MessagingAddr = peers[registry.Messaging.Name]
		return campaigns.New(ctx, c)
	},
	registry.Polls.Name: func(ctx context.Context, cfg *Config, peers map[string]string, log *slog.Logger) (process.Server, error) {
		c := cfg.Polls
		c.Logger = log
		c.OrgsAddr = peers[registry.Orgs.Name]
		c.ContactsAddr = peers[registry.Contacts.Name]
		c.BillingAddr = peers[registry.Billing.Name]
		c.MessagingAddr = peers[registry.Messaging.Name]
		return polls.New(ctx, c)
	},
	registry.Analytics.Name: func(ctx context.Context, cfg *Config, peers map[string]string, log *slog.Logger) (process.Server, error) {
		c := cfg.Analytics
		c.Logger = log
		c.OrgsAddr = peers[registry.Orgs.Name]
		c.ContactsAddr = peers[registry.Contacts.Name]
		return analytics.New(ctx, c)
	},
	registry.Gateway.Name: func(ctx context.Context, cfg *Config, peers map[string]string, log *slog.Logger) (process.Server, error) {
		c := cfg.Gateway
		c.Logger = log
		c.OrgsAddr = peers[registry.Orgs.Name]
		c.ContactsAddr = peers[registry.Contacts.Name]
		c.BillingAddr = peers[registry.Billing.Name]
		c.MessagingAddr = peers[registry.Messaging.Name]
		c.CampaignsAddr = peers[registry.Campaigns.Name]
		c.PollsAddr = peers[registry.Polls.Name]
		c.AnalyticsAddr = peers[registry.Analytics.Name]
		return gateway.New(ctx, c)
	},
}
