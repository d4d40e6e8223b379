// Command gateway runs the REST gateway on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"log/slog"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
)

func main() {
	process.Main("gateway", func(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
		cfg := gateway.ConfigFromEnv(env)
		cfg.Logger = log
		return cfg.HTTPAddr, func(ctx context.Context) (process.Server, error) { return gateway.New(ctx, cfg) }
	})
}
