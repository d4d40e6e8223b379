// Command orgs runs the organizations service on its own (one Deployment in Kubernetes).
package main

import (
	"context"
	"log/slog"
	_ "time/tzdata" // organization timezones are validated against the IANA database, present or not on the host

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/services/orgs"
)

func main() {
	process.Main("orgs", func(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (process.Server, error)) {
		cfg := orgs.ConfigFromEnv(env)
		cfg.Logger = log
		return env.String("CHORUS_GRPC_ADDR", "127.0.0.1:9101"), func(ctx context.Context) (process.Server, error) {
			return orgs.New(ctx, cfg)
		}
	})
}
