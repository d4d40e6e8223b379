package process

import (
	"context"
	"log/slog"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/registry"
)

// Wiring is what a process hands the server it runs beside the server's own settings: where
// the services its registry row needs answer, and where it logs. Every service's and the
// gateway's Config embeds it, so SetupFor (a binary of its own) and the all-in-one stack (its
// listeners) give it to each the same way.
type Wiring struct {
	Peers  registry.Peers // by registry name: each need's AddrVar, else its default
	Logger *slog.Logger   // nil: slog.Default
}

// Wire sets where the peers answer and the logger.
func (w *Wiring) Wire(peers registry.Peers, log *slog.Logger) { w.Peers, w.Logger = peers, log }

// Wirable is a pointer to a Config that embeds Wiring.
type Wirable[C any] interface {
	*C
	Wire(peers registry.Peers, log *slog.Logger)
}

// SetupFor is the Setup of the server in registry row reg: it reads the server's own variables
// with fromEnv and its peers' addresses from their AddrVars, and listens at reg's address. The
// manifests test reads each Deployment's environment through it.
func SetupFor[C any, W Wirable[C], S Server](reg registry.Service, fromEnv func(*envconfig.Reader) C, build func(context.Context, C) (S, error)) Setup {
	return func(env *envconfig.Reader, log *slog.Logger) (string, func(context.Context) (Server, error)) {
		cfg := fromEnv(env)
		W(&cfg).Wire(reg.PeersFrom(env), log)
		return reg.ListenFrom(env), func(ctx context.Context) (Server, error) { return build(ctx, cfg) }
	}
}
