// Command analytics runs the analytics service on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"log/slog"
	_ "time/tzdata" // hours and days are bucketed in organizations' timezones

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/analytics"
)

func main() {
	process.Main(registry.Analytics.Name, func(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
		cfg := analytics.ConfigFromEnv(env)
		cfg.Logger = log
		return registry.Analytics.ListenFrom(env), func(ctx context.Context) (process.Server, error) {
			return analytics.New(ctx, cfg)
		}
	})
}
