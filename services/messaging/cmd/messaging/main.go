// Command messaging runs the messaging service on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"log/slog"
	_ "time/tzdata" // quiet hours are computed in organization timezones, present or not on the host

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/messaging"
)

func main() {
	process.Main(registry.Messaging.Name, func(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
		cfg := messaging.ConfigFromEnv(env)
		cfg.Logger = log
		return registry.Messaging.ListenFrom(env), func(ctx context.Context) (process.Server, error) {
			return messaging.New(ctx, cfg)
		}
	})
}
