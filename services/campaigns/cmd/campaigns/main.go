// Command campaigns runs the campaigns service on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"log/slog"
	_ "time/tzdata" // quiet hours are computed in campaign and organization timezones

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/campaigns"
)

func main() {
	process.Main(registry.Campaigns.Name, func(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
		cfg := campaigns.ConfigFromEnv(env)
		cfg.Logger = log
		return registry.Campaigns.ListenFrom(env), func(ctx context.Context) (process.Server, error) {
			return campaigns.New(ctx, cfg)
		}
	})
}
