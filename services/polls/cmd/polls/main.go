// Command polls runs the polls service on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"log/slog"
	_ "time/tzdata" // quiet hours are computed in poll and organization timezones

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/polls"
)

func main() {
	process.Main(registry.Polls.Name, func(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
		cfg := polls.ConfigFromEnv(env)
		cfg.Logger = log
		return registry.Polls.ListenFrom(env), func(ctx context.Context) (process.Server, error) {
			return polls.New(ctx, cfg)
		}
	})
}
