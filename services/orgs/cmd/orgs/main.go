// Command orgs runs the organizations service on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"log/slog"
	_ "time/tzdata" // organization timezones are validated against the IANA database, present or not on the host

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/orgs"
)

func main() {
	process.Main(registry.Orgs.Name, func(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
		cfg := orgs.ConfigFromEnv(env)
		cfg.Logger = log
		return registry.Orgs.ListenFrom(env), func(ctx context.Context) (process.Server, error) {
			return orgs.New(ctx, cfg)
		}
	})
}
