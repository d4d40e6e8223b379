package registry_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/chorus-sms/chorus/pkg/registry"
)

// baseDir holds the Kubernetes base manifests, one file per process.
const baseDir = "../../deploy/k8s/base"

// object is the part of a Kubernetes object the registry speaks about.
type object struct {
	file      string
	Kind      string
	Metadata  struct{ Name string }
	Resources []string // a Kustomization's files
	Spec      struct {
		Template struct {
			Spec struct{ Containers []container }
		}
		Ports       []servicePort // a Service's
		PodSelector struct {      // a NetworkPolicy's
			MatchExpressions []struct {
				Key    string
				Values []string
			} `yaml:"matchExpressions"`
		} `yaml:"podSelector"`
	}
}

type container struct {
	Name  string
	Ports []struct {
		Name          string
		ContainerPort int `yaml:"containerPort"`
	}
	Env           []struct{ Name, Value string }
	LivenessProbe struct {
		GRPC *struct{ Port int } `yaml:"grpc"`
	} `yaml:"livenessProbe"`
}

type servicePort struct {
	Name       string
	Port       int
	TargetPort string `yaml:"targetPort"`
}

func (c container) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func (c container) port(name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func port(s registry.Service) int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

func lookup(name string) (registry.Service, bool) {
	i := slices.IndexFunc(registry.All, func(s registry.Service) bool { return s.Name == name })
	if i < 0 {
		return registry.Service{}, false
	}
	return registry.All[i], true
}

// loadManifests decodes every document of every YAML file in dir.
func loadManifests(t *testing.T, dir string) []object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no manifests in %s", dir)
	var objs []object
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o object
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, f)
			o.file = filepath.Base(f)
			objs = append(objs, o)
		}
	}
	return objs
}

// checkManifests lists every way objs disagree with the registry.
func checkManifests(objs []object) []string {
	var problems []string
	find := func(kind, name string) *object {
		for i := range objs {
			if objs[i].Kind == kind && objs[i].Metadata.Name == name {
				return &objs[i]
			}
		}
		return nil
	}
	var resources, policed []string
	for _, o := range objs {
		resources = append(resources, o.Resources...)
		for _, m := range o.Spec.PodSelector.MatchExpressions {
			if o.Kind == "NetworkPolicy" && m.Key == "app.kubernetes.io/name" {
				policed = append(policed, m.Values...)
			}
		}
	}
	for _, s := range registry.All {
		problem := func(format string, args ...any) {
			problems = append(problems, s.Name+": "+fmt.Sprintf(format, args...))
		}
		if svc := find("Service", s.Name); svc == nil {
			problem("no Service")
		} else if i := slices.IndexFunc(svc.Spec.Ports, func(p servicePort) bool { return p.Name == string(s.Protocol) }); i < 0 {
			problem("Service has no %s port", s.Protocol)
		} else if p := svc.Spec.Ports[i]; p.TargetPort != string(s.Protocol) || (s.Protocol == registry.GRPC && p.Port != port(s)) {
			// Peers reach a gRPC service at name:port from the registry; the gateway's
			// Service port is its public one.
			problem("Service port %s is %d -> %s, want %d -> %s", p.Name, p.Port, p.TargetPort, port(s), s.Protocol)
		}
		if s.Protocol == registry.GRPC && !slices.Contains(policed, s.Name) {
			problem("not covered by a NetworkPolicy: it trusts the tenant metadata callers send")
		}
		dep := find("Deployment", s.Name)
		if dep == nil {
			problem("no Deployment")
			continue
		}
		if !slices.Contains(resources, dep.file) {
			problem("%s is not among the kustomization's resources", dep.file)
		}
		ci := slices.IndexFunc(dep.Spec.Template.Spec.Containers, func(c container) bool { return c.Name == s.Name })
		if ci < 0 {
			problem("Deployment has no container named %s", s.Name)
			continue
		}
		c := dep.Spec.Template.Spec.Containers[ci]
		if got := c.port(string(s.Protocol)); got != port(s) {
			problem("container port %s is %d, want %d", s.Protocol, got, port(s))
		}
		if got, _ := c.env(s.Protocol.ListenVar()); got != fmt.Sprintf("0.0.0.0:%d", port(s)) {
			problem("%s is %q, want 0.0.0.0:%d", s.Protocol.ListenVar(), got, port(s))
		}
		if p := c.LivenessProbe.GRPC; p != nil && p.Port != port(s) {
			problem("gRPC liveness probe on port %d, want %d", p.Port, port(s))
		}
		if s.OpsPort != 0 {
			if got, _ := c.env("CHORUS_OPS_ADDR"); got != fmt.Sprintf("0.0.0.0:%d", s.OpsPort) || c.port("ops") != s.OpsPort {
				problem("CHORUS_OPS_ADDR %q and ops port %d, want port %d", got, c.port("ops"), s.OpsPort)
			}
		}
		for _, peer := range registry.All {
			if peer.Name == s.Name {
				continue
			}
			got, given := c.env(peer.AddrVar)
			want := fmt.Sprintf("%s:%d", peer.Name, port(peer))
			switch needed := slices.Contains(s.Needs, peer.Name); {
			case needed && !given:
				problem("does not give %s (it would dial the default %s)", peer.AddrVar, peer.Addr)
			case given && !needed:
				problem("gives %s, but the registry does not list %s among its needs", peer.AddrVar, peer.Name)
			case given && got != want:
				problem("%s is %q, want %q", peer.AddrVar, got, want)
			}
		}
	}
	return problems
}

func TestManifestsAgreeWithRegistry(t *testing.T) {
	assert.Empty(t, checkManifests(loadManifests(t, baseDir)))
}

// The check fails on each kind of drift it is there to catch.
func TestManifestCheckFindsDrift(t *testing.T) {
	setEnv := func(c *container, name, value string) {
		for i := range c.Env {
			if c.Env[i].Name == name {
				c.Env[i].Value = value
			}
		}
	}
	containerOf := func(objs []object, name string) *container {
		for i := range objs {
			if objs[i].Kind == "Deployment" && objs[i].Metadata.Name == name {
				return &objs[i].Spec.Template.Spec.Containers[0]
			}
		}
		t.Fatalf("no Deployment %s", name)
		return nil
	}
	for name, tc := range map[string]struct {
		drift func([]object) []object
		want  string
	}{
		"missing Service": {
			drift: func(objs []object) []object {
				return slices.DeleteFunc(objs, func(o object) bool { return o.Kind == "Service" && o.Metadata.Name == "billing" })
			},
			want: "billing: no Service",
		},
		"missing Deployment": {
			drift: func(objs []object) []object {
				return slices.DeleteFunc(objs, func(o object) bool { return o.Kind == "Deployment" && o.Metadata.Name == "contacts" })
			},
			want: "contacts: no Deployment",
		},
		"listen address": {
			drift: func(objs []object) []object {
				setEnv(containerOf(objs, "orgs"), "CHORUS_GRPC_ADDR", "0.0.0.0:9999")
				return objs
			},
			want: `orgs: CHORUS_GRPC_ADDR is "0.0.0.0:9999", want 0.0.0.0:9101`,
		},
		"container port": {
			drift: func(objs []object) []object {
				containerOf(objs, "messaging").Ports[0].ContainerPort = 9100
				return objs
			},
			want: "messaging: container port grpc is 9100, want 9103",
		},
		"peer address": {
			drift: func(objs []object) []object {
				setEnv(containerOf(objs, "gateway"), "CHORUS_BILLING_ADDR", "billing:9102")
				return objs
			},
			want: `gateway: CHORUS_BILLING_ADDR is "billing:9102", want "billing:9107"`,
		},
		"peer not given": {
			drift: func(objs []object) []object {
				c := containerOf(objs, "messaging")
				c.Env = slices.DeleteFunc(c.Env, func(e struct{ Name, Value string }) bool { return e.Name == "CHORUS_CONTACTS_ADDR" })
				return objs
			},
			want: "messaging: does not give CHORUS_CONTACTS_ADDR (it would dial the default 127.0.0.1:9102)",
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := checkManifests(tc.drift(loadManifests(t, baseDir)))
			assert.Equal(t, []string{tc.want}, got)
		})
	}
}
