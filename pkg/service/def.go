package service

import (
	"context"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
)

// Def is what a service is, fixed in its code: its registry row (its name, the peers it
// dials, how long its work may take to stop) and its layout. Each service declares one, reads
// its storage through it and builds through it, so its own file holds only what is its own.
type Def struct {
	Service registry.Service
	Layout
}

// StorageFromEnv reads where the service's storage is (see the package function).
func (d Def) StorageFromEnv(r *envconfig.Reader) Storage { return StorageFromEnv(r, d.Layout) }

// Build opens the service's shell at s, dials its peers as w says, and lets build add its
// gRPC server and its work (see the package function).
func (d Def) Build(ctx context.Context, s Storage, w process.Wiring, build func(*Shell) error) (Server, error) {
	return Build(ctx, Config{Service: d.Service, Wiring: w, Storage: s, Layout: d.Layout}, build)
}
