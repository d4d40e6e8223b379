// Command billing runs the billing service on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"log/slog"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/billing"
)

func main() {
	process.Main(registry.Billing.Name, func(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
		cfg := billing.ConfigFromEnv(env)
		cfg.Logger = log
		return registry.Billing.ListenFrom(env), func(ctx context.Context) (process.Server, error) {
			return billing.New(ctx, cfg)
		}
	})
}
