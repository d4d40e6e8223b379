// Command contacts runs the contacts service on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"log/slog"
	_ "time/tzdata" // contact timezones are validated against the IANA database, present or not on the host

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/contacts"
)

func main() {
	process.Main(registry.Contacts.Name, func(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
		cfg := contacts.ConfigFromEnv(env)
		cfg.Logger = log
		return registry.Contacts.ListenFrom(env), func(ctx context.Context) (process.Server, error) {
			return contacts.New(ctx, cfg)
		}
	})
}
