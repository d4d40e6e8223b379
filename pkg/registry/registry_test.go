package registry_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/registry"
)

// The stack starts services in the order of All, giving each its peers' addresses, so a
// service listed before one it needs would be handed an empty address.
func TestStartOrder(t *testing.T) {
	started := map[string]bool{}
	for _, s := range registry.All {
		require.False(t, started[s.Name], "%s is listed twice", s.Name)
		for _, need := range s.Needs {
			assert.True(t, started[need], "%s needs %s, which is not listed before it", s.Name, need)
		}
		started[s.Name] = true
	}
}

// Every binary can run on one machine at its default address, and each is named by its own
// variable.
func TestAddrs(t *testing.T) {
	ports, vars := map[string]string{}, map[string]string{}
	for _, s := range registry.All {
		host, port, err := net.SplitHostPort(s.Addr)
		require.NoError(t, err, s.Name)
		assert.Equal(t, "127.0.0.1", host, "%s defaults to loopback", s.Name)
		assert.Empty(t, ports[port], "%s and %s share port %s", s.Name, ports[port], port)
		ports[port] = s.Name
		assert.Empty(t, vars[s.AddrVar], "%s and %s share %s", s.Name, vars[s.AddrVar], s.AddrVar)
		vars[s.AddrVar] = s.Name
		if s.Protocol == registry.GRPC {
			assert.Equal(t, "CHORUS_"+strings.ToUpper(s.Name)+"_ADDR", s.AddrVar)
		}
	}
}

func TestAddrFromAndListenFrom(t *testing.T) {
	r := envconfig.FromMap(map[string]string{"CHORUS_ORGS_ADDR": "orgs:9101", "CHORUS_GRPC_ADDR": "0.0.0.0:9101"})
	assert.Equal(t, "orgs:9101", registry.Orgs.AddrFrom(r))
	assert.Equal(t, "127.0.0.1:9102", registry.Contacts.AddrFrom(r), "unset: the default")
	assert.Equal(t, "0.0.0.0:9101", registry.Orgs.ListenFrom(r))
	assert.Equal(t, "127.0.0.1:8080", registry.Gateway.ListenFrom(r), "the gateway listens on CHORUS_HTTP_ADDR")
}

// A process reads its peers' addresses from their variables, with the registry's defaults,
// and only those of the services it needs.
func TestPeersFrom(t *testing.T) {
	r := envconfig.FromMap(map[string]string{"CHORUS_ORGS_ADDR": "orgs:9101", "CHORUS_POLLS_ADDR": "polls:9105"})
	assert.Equal(t, registry.Peers{"orgs": "orgs:9101", "contacts": "127.0.0.1:9102"}, registry.Analytics.PeersFrom(r))
	assert.Empty(t, registry.Orgs.PeersFrom(r))
	for _, s := range registry.All {
		named, ok := registry.Named(s.Name)
		assert.True(t, ok)
		assert.Equal(t, s.Name, named.Name)
	}
	_, ok := registry.Named("nope")
	assert.False(t, ok)
}

// `make images` builds each row's binary from Main, names the image after the row, and the
// manifests give each pod longer than Drain to stop.
func TestEveryRowNamesItsBinaryAndDrain(t *testing.T) {
	for _, s := range registry.All {
		assert.Equal(t, s.Name, filepath.Base(s.Main), "%s: the binary's directory is named after the process", s.Name)
		assert.FileExists(t, filepath.Join("../..", s.Main, "main.go"), "%s: Main is its main package", s.Name)
		assert.Positive(t, s.Drain, "%s: a drain bound", s.Name)
	}
}
