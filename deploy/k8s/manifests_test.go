// The Kubernetes manifests, rendered as kubectl apply -k would render each overlay and decoded
// strictly into the Kubernetes API types, are held to the registry and to the code: every
// process has its objects, its ports and probes where the registry puts them, and every
// variable it reads at start is given, from a Secret when it is a credential.
package k8s_test

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/chorus-sms/chorus/deploy/images"
	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/analytics"
	"github.com/chorus-sms/chorus/services/billing"
	"github.com/chorus-sms/chorus/services/campaigns"
	"github.com/chorus-sms/chorus/services/contacts"
	"github.com/chorus-sms/chorus/services/messaging"
	"github.com/chorus-sms/chorus/services/orgs"
	"github.com/chorus-sms/chorus/services/polls"
	"github.com/chorus-sms/chorus/services/webhooks"
)

// setups is what each registry process reads at start (its main is process.Main(name,
// Setup)). A new service adds its Setup here; TestEveryProcessHasASetup says when one is
// missing.
var setups = map[string]process.Setup{
	registry.Orgs.Name:      orgs.Setup,
	registry.Contacts.Name:  contacts.Setup,
	registry.Billing.Name:   billing.Setup,
	registry.Messaging.Name: messaging.Setup,
	registry.Campaigns.Name: campaigns.Setup,
	registry.Polls.Name:     polls.Setup,
	registry.Analytics.Name: analytics.Setup,
	registry.Webhooks.Name:  webhooks.Setup,
	registry.Gateway.Name:   gateway.Setup,
}

func TestEveryProcessHasASetup(t *testing.T) {
	for _, s := range registry.All {
		assert.Contains(t, setups, s.Name, "registry process %s has no Setup in this test", s.Name)
	}
	assert.Len(t, setups, len(registry.All), "a Setup without a registry row")
}

// manifests is one rendered overlay, by kind and name.
type manifests struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	pdbs        map[string]*policyv1.PodDisruptionBudget
	hpas        map[string]*autoscalingv2.HorizontalPodAutoscaler
	policies    map[string]*networkingv1.NetworkPolicy
	configMaps  map[string]*corev1.ConfigMap
	namespaces  map[string]*corev1.Namespace
	secrets     []string
	counts      map[string]int // objects by kind
}

// into decodes one object strictly (an unknown or duplicated field fails) into m's map for
// its kind, checking its apiVersion.
func (m *manifests) into(apiVersion, kind, name string, data []byte) error {
	decode := func(want string, obj any) error {
		if apiVersion != want {
			return fmt.Errorf("%s %s: apiVersion %s, want %s", kind, name, apiVersion, want)
		}
		if err := yaml.UnmarshalStrict(data, obj); err != nil {
			return fmt.Errorf("%s %s: %w", kind, name, err)
		}
		return nil
	}
	switch kind {
	case "Deployment":
		return decodeInto(decode, "apps/v1", name, m.deployments)
	case "Service":
		return decodeInto(decode, "v1", name, m.services)
	case "PodDisruptionBudget":
		return decodeInto(decode, "policy/v1", name, m.pdbs)
	case "HorizontalPodAutoscaler":
		return decodeInto(decode, "autoscaling/v2", name, m.hpas)
	case "NetworkPolicy":
		return decodeInto(decode, "networking.k8s.io/v1", name, m.policies)
	case "ConfigMap":
		return decodeInto(decode, "v1", name, m.configMaps)
	case "Namespace":
		return decodeInto(decode, "v1", name, m.namespaces)
	case "Secret":
		m.secrets = append(m.secrets, name)
		return nil
	}
	return fmt.Errorf("%s %s: a kind this test does not know; decode it here", kind, name)
}

func decodeInto[T any](decode func(string, any) error, apiVersion, name string, into map[string]*T) error {
	obj := new(T)
	if err := decode(apiVersion, obj); err != nil {
		return err
	}
	into[name] = obj
	return nil
}

// render builds the kustomization in dir with kustomize's own library, as kubectl apply -k
// does.
func render(t *testing.T, dir string) *manifests {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize build %s", dir)
	m := &manifests{
		deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		policies: map[string]*networkingv1.NetworkPolicy{}, configMaps: map[string]*corev1.ConfigMap{},
		namespaces: map[string]*corev1.Namespace{}, counts: map[string]int{},
	}
	for _, r := range res.Resources() {
		data, err := r.AsYAML()
		require.NoError(t, err)
		require.NoError(t, m.into(r.GetApiVersion(), r.GetKind(), r.GetName(), data))
		m.counts[r.GetKind()]++
	}
	return m
}

func overlays(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("overlays/*/kustomization.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

func TestOverlaysAgreeWithRegistryAndCode(t *testing.T) {
	for _, dir := range overlays(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			m := render(t, dir)
			assert.Empty(t, check(m))
			total := 0
			for _, n := range m.counts {
				total += n
			}
			t.Logf("%s: %d objects %v", dir, total, m.counts)
		})
	}
}

// check lists every way m disagrees with the registry and the code.
func check(m *manifests) []string {
	var problems []string
	readers := map[string][]string{} // variable -> the processes that read it
	for _, s := range registry.All {
		problem := func(format string, args ...any) {
			problems = append(problems, s.Name+": "+fmt.Sprintf(format, args...))
		}
		dep := m.deployments[s.Name]
		if dep == nil {
			problem("no Deployment")
		} else {
			vars := checkDeployment(s, dep, m.configMaps, problem)
			for _, v := range vars {
				readers[v] = append(readers[v], s.Name)
			}
			checkServing(s, dep.Spec.Template.Labels, m, problem)
		}
	}
	for _, name := range m.secrets {
		problems = append(problems, "Secret "+name+": secrets are referenced, never written in the manifests")
	}
	if p := m.policies["default-deny-ingress"]; p == nil || len(p.Spec.PodSelector.MatchLabels)+len(p.Spec.PodSelector.MatchExpressions) > 0 || len(p.Spec.Ingress) > 0 {
		problems = append(problems, "no NetworkPolicy default-deny-ingress closing every pod")
	}
	for _, store := range []struct{ policy, variable string }{{"postgresql", "CHORUS_DATABASE_URL"}, {"redis", "CHORUS_REDIS_URL"}} {
		want := slices.Sorted(slices.Values(readers[store.variable]))
		p := m.policies[store.policy]
		if p == nil {
			problems = append(problems, "no NetworkPolicy "+store.policy)
			continue
		}
		var got []string
		for _, rule := range p.Spec.Ingress {
			got = append(got, sources(rule.From)...)
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("NetworkPolicy %s admits %v, want the readers of %s %v", store.policy, got, store.variable, want))
		}
	}
	return problems
}

// checkDeployment checks s's Deployment and returns the variables s reads.
func checkDeployment(s registry.Service, dep *appsv1.Deployment, configMaps map[string]*corev1.ConfigMap, problem func(string, ...any)) []string {
	pod := dep.Spec.Template.Spec
	if dep.Spec.Replicas != nil {
		problem("Deployment sets replicas, which its HorizontalPodAutoscaler owns (every apply would reset them)")
	}
	if sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector); err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		problem("Deployment selector does not match its pods")
	}
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == s.Name })
	if i < 0 {
		problem("Deployment has no container named %s", s.Name)
		return nil
	}
	c := pod.Containers[i]
	if repo, tag, _ := strings.Cut(c.Image, ":"); repo != images.Repo+s.Name || tag == "" || tag == "latest" {
		problem("image %q, want %s%s at a version tag", c.Image, images.Repo, s.Name)
	}
	if got := containerPort(c, string(s.Protocol)); got != port(s) {
		problem("container port %s is %d, want %d", s.Protocol, got, port(s))
	}
	probePort := string(s.Protocol)
	if s.OpsPort != 0 {
		probePort = "ops"
		if got := containerPort(c, "ops"); got != s.OpsPort {
			problem("container port ops is %d, want %d", got, s.OpsPort)
		}
	}
	for _, p := range []struct {
		kind, path string
		probe      *corev1.Probe
	}{{"startup", "/healthz", c.StartupProbe}, {"liveness", "/healthz", c.LivenessProbe}, {"readiness", "/readyz", c.ReadinessProbe}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || resolvePort(c, p.probe.HTTPGet.Port.String()) != containerPort(c, probePort) {
			problem("%s probe must GET %s on the %s port", p.kind, p.path, probePort)
		}
	}
	sc, csc := pod.SecurityContext, c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != images.UID {
		problem("pod must run as non-root user %d, the images' user", images.UID)
	}
	if csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation ||
		csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") {
		problem("container must have a read-only root filesystem, no privilege escalation and no capabilities")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		problem("container must request CPU and memory and limit memory")
	}
	if !memLimitBelow(c) {
		problem("GOMEMLIMIT must be given, in bytes or MiB, below the container's memory limit (the processes collect garbage late without it)")
	}
	var preStop int64
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = c.Lifecycle.PreStop.Sleep.Seconds
	}
	if need := preStop + int64(s.Drain.Seconds()); pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds <= need {
		problem("terminationGracePeriodSeconds must exceed the preStop sleep and the drain (%ds)", need)
	}
	if len(c.EnvFrom) > 0 {
		problem("envFrom hides which variables are given: name each one in env")
	}
	return checkEnv(s, c, configMaps, problem)
}

// memLimitBelow says whether c gives the Go runtime a soft memory limit below its
// container's memory limit.
func memLimitBelow(c corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name != "GOMEMLIMIT" {
			continue
		}
		q, err := resource.ParseQuantity(strings.Replace(e.Value, "MiB", "Mi", 1))
		return err == nil && q.Cmp(*c.Resources.Limits.Memory()) < 0
	}
	return false
}

// goRuntimeVars are read by the Go runtime itself, not by a process's configuration.
var goRuntimeVars = []string{"GOGC", "GOMEMLIMIT"}

// checkEnv reads s's configuration, as its main does, from the container's environment (a
// Secret's value stands in as a placeholder URL), and checks each variable it reads: one that
// is required, a credential, or defaults to this machine must be given, a credential from a
// Secret; and nothing is given that s does not read.
func checkEnv(s registry.Service, c corev1.Container, configMaps map[string]*corev1.ConfigMap, problem func(string, ...any)) []string {
	given, fromSecret := map[string]string{}, map[string]bool{}
	for _, e := range c.Env {
		switch from := e.ValueFrom; {
		case from == nil:
			given[e.Name] = e.Value
		case from.SecretKeyRef != nil:
			given[e.Name] = "secret://" + from.SecretKeyRef.Name + "/" + from.SecretKeyRef.Key
			fromSecret[e.Name] = true
		case from.ConfigMapKeyRef != nil:
			ref := from.ConfigMapKeyRef
			cm := configMaps[ref.Name]
			if cm == nil || cm.Data[ref.Key] == "" {
				problem("%s comes from ConfigMap %s key %s, which the overlay does not define", e.Name, ref.Name, ref.Key)
				continue
			}
			given[e.Name] = cm.Data[ref.Key]
		default:
			given[e.Name] = "from-the-pod"
		}
	}
	setup, ok := setups[s.Name]
	if !ok {
		problem("no Setup to read its configuration with (add it to setups)")
		return nil
	}
	env := envconfig.FromMap(given)
	addr, opsAddr, _ := process.Configure(env, setup, slog.New(slog.DiscardHandler))
	var read []string
	missing := false
	for _, v := range env.Vars() {
		read = append(read, v.Name)
		_, ok := given[v.Name]
		switch {
		case !ok && v.Required:
			problem("%s is required at start but not given", v.Name)
		case !ok && v.Secret:
			problem("%s is a credential read at start but not given (its default is for development)", v.Name)
		case !ok && onThisMachine(v.Default):
			problem("%s is read at start but not given (its default %s is this machine)", v.Name, v.Default)
		case ok && v.Secret && !fromSecret[v.Name]:
			problem("%s is a credential: give it from a Secret (secretKeyRef), not a value", v.Name)
		default:
			continue
		}
		missing = true
	}
	for name := range given {
		if !slices.Contains(read, name) && !slices.Contains(goRuntimeVars, name) {
			problem("gives %s, which it does not read", name)
		}
	}
	if err := env.Err(); err != nil && !missing {
		problem("would not start: %v", err)
	}
	if want := "0.0.0.0:" + strconv.Itoa(port(s)); addr != want {
		problem("listens on %q, want %s", addr, want)
	}
	if want := "0.0.0.0:" + strconv.Itoa(s.OpsPort); s.OpsPort != 0 && opsAddr != want {
		problem("CHORUS_OPS_ADDR is %q, want %s", opsAddr, want)
	}
	for _, peer := range registry.All {
		got, ok := given[peer.AddrVar]
		if want := fmt.Sprintf("%s:%d", peer.Name, port(peer)); ok && slices.Contains(s.Needs, peer.Name) && got != want {
			problem("%s is %q, want %q", peer.AddrVar, got, want)
		}
	}
	return read
}

// checkServing checks the objects that route to, protect and scale s's pods.
func checkServing(s registry.Service, pods map[string]string, m *manifests, problem func(string, ...any)) {
	selects := func(sel *metav1.LabelSelector) bool {
		ls, err := metav1.LabelSelectorAsSelector(sel)
		return err == nil && !ls.Empty() && ls.Matches(labels.Set(pods))
	}
	if svc := m.services[s.Name]; svc == nil {
		problem("no Service")
	} else {
		if !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}) {
			problem("Service does not select its pods")
		}
		i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == string(s.Protocol) })
		switch {
		case i < 0:
			problem("Service has no %s port", s.Protocol)
		case svc.Spec.Ports[i].TargetPort.String() != string(s.Protocol):
			problem("Service port %s targets %s, want %s", s.Protocol, svc.Spec.Ports[i].TargetPort.String(), s.Protocol)
		case s.Protocol == registry.GRPC && int(svc.Spec.Ports[i].Port) != port(s):
			// Peers reach a gRPC service at name:port from the registry; the gateway's Service
			// port is its public one.
			problem("Service port grpc is %d, want %d", svc.Spec.Ports[i].Port, port(s))
		}
	}
	if pdb := m.pdbs[s.Name]; pdb == nil {
		problem("no PodDisruptionBudget")
	} else if !selects(pdb.Spec.Selector) || (pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil) {
		problem("PodDisruptionBudget must select its pods and bound how many may be evicted")
	}
	if hpa := m.hpas[s.Name]; hpa == nil {
		problem("no HorizontalPodAutoscaler")
	} else if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != s.Name || hpa.Spec.MinReplicas == nil ||
		*hpa.Spec.MinReplicas < 1 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas || len(hpa.Spec.Metrics) == 0 {
		problem("HorizontalPodAutoscaler must scale Deployment %s between 1 or more and a larger maximum, on a metric", s.Name)
	}
	if s.Protocol != registry.GRPC {
		return
	}
	// Services trust the tenant metadata callers send: only the registry's callers may reach
	// the gRPC port.
	var callers []string
	for _, caller := range registry.All {
		if slices.Contains(caller.Needs, s.Name) {
			callers = append(callers, caller.Name)
		}
	}
	var admitted []string
	open := false
	for _, p := range m.policies {
		if !selects(&p.Spec.PodSelector) {
			continue
		}
		for _, rule := range p.Spec.Ingress {
			if !coversPort(rule.Ports, "grpc", port(s)) {
				continue
			}
			got := sources(rule.From)
			open = open || len(got) < len(rule.From) || len(rule.From) == 0
			admitted = append(admitted, got...)
		}
	}
	slices.Sort(callers)
	slices.Sort(admitted)
	if admitted = slices.Compact(admitted); open || !slices.Equal(admitted, callers) {
		problem("NetworkPolicies admit %v to the gRPC port (open to others: %t), want its callers %v", admitted, open, callers)
	}
}

// sources names the processes peers admits by app.kubernetes.io/name; a peer of another shape
// (a namespace, an IP block, a label set) is left out, so the caller sees fewer names than peers.
func sources(peers []networkingv1.NetworkPolicyPeer) []string {
	var names []string
	for _, p := range peers {
		if p.PodSelector == nil || p.NamespaceSelector != nil || p.IPBlock != nil || len(p.PodSelector.MatchLabels) > 0 {
			continue
		}
		for _, e := range p.PodSelector.MatchExpressions {
			if e.Key == "app.kubernetes.io/name" && e.Operator == metav1.LabelSelectorOpIn {
				names = append(names, e.Values...)
			}
		}
	}
	return names
}

func coversPort(ports []networkingv1.NetworkPolicyPort, name string, number int) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Port == nil || p.Port.String() == name || p.Port.String() == strconv.Itoa(number) {
			return true
		}
	}
	return false
}

func containerPort(c corev1.Container, name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return int(p.ContainerPort)
		}
	}
	return 0
}

// resolvePort is the number a probe's port (a name or a number) stands for.
func resolvePort(c corev1.Container, p string) int {
	if n, err := strconv.Atoi(p); err == nil {
		return n
	}
	return containerPort(c, p)
}

func port(s registry.Service) int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// onThisMachine says whether a default names the loopback host: fine on a developer's machine,
// wrong in a pod.
func onThisMachine(def string) bool {
	return strings.Contains(def, "127.0.0.1") || strings.Contains(def, "localhost") || strings.Contains(def, "[::1]")
}

// The check fails on each kind of drift it is there to catch, naming the process and what to
// fix.
func TestManifestCheckFindsDrift(t *testing.T) {
	container := func(m *manifests, name string) *corev1.Container {
		return &m.deployments[name].Spec.Template.Spec.Containers[0]
	}
	dropEnv := func(c *corev1.Container, name string) {
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	}
	dropValue := func(values *[]string, v string) {
		*values = slices.DeleteFunc(*values, func(s string) bool { return s == v })
	}
	for name, tc := range map[string]struct {
		overlay string
		drift   func(*manifests)
		want    string
	}{
		"no HPA": {
			drift: func(m *manifests) { delete(m.hpas, "polls") },
			want:  "polls: no HorizontalPodAutoscaler",
		},
		"no PDB": {
			drift: func(m *manifests) { delete(m.pdbs, "billing") },
			want:  "billing: no PodDisruptionBudget",
		},
		"database not given": {
			drift: func(m *manifests) { dropEnv(container(m, "orgs"), "CHORUS_DATABASE_URL") },
			want:  "orgs: CHORUS_DATABASE_URL is a credential read at start but not given (its default is for development)",
		},
		"peer left at its default": {
			drift: func(m *manifests) { dropEnv(container(m, "polls"), "CHORUS_BILLING_ADDR") },
			want:  "polls: CHORUS_BILLING_ADDR is read at start but not given (its default 127.0.0.1:9107 is this machine)",
		},
		"peer address": {
			drift: func(m *manifests) {
				c := container(m, "gateway")
				dropEnv(c, "CHORUS_BILLING_ADDR")
				c.Env = append(c.Env, corev1.EnvVar{Name: "CHORUS_BILLING_ADDR", Value: "billing:9102"})
			},
			want: `gateway: CHORUS_BILLING_ADDR is "billing:9102", want "billing:9107"`,
		},
		"probe on the wrong port": {
			drift: func(m *manifests) { container(m, "campaigns").LivenessProbe.HTTPGet.Port = intstr.FromString("grpc") },
			want:  "campaigns: liveness probe must GET /healthz on the ops port",
		},
		"credential as a value": {
			drift: func(m *manifests) {
				c := container(m, "messaging")
				dropEnv(c, "CHORUS_CURSOR_SECRET")
				c.Env = append(c.Env, corev1.EnvVar{Name: "CHORUS_CURSOR_SECRET", Value: "hunter2"})
			},
			want: "messaging: CHORUS_CURSOR_SECRET is a credential: give it from a Secret (secretKeyRef), not a value",
		},
		"Twilio credentials missing where Twilio is used": {
			overlay: "overlays/production",
			drift:   func(m *manifests) { dropEnv(container(m, "contacts"), "CHORUS_TWILIO_AUTH_TOKEN") },
			want:    "contacts: CHORUS_TWILIO_AUTH_TOKEN is required at start but not given",
		},
		"a variable nothing reads": {
			drift: func(m *manifests) {
				c := container(m, "polls")
				c.Env = append(c.Env, corev1.EnvVar{Name: "CHORUS_POLL_HOURS", Value: "1h"})
			},
			want: "polls: gives CHORUS_POLL_HOURS, which it does not read",
		},
		"a value the process refuses": {
			drift: func(m *manifests) {
				c := container(m, "messaging")
				c.Env = append(c.Env, corev1.EnvVar{Name: "CHORUS_NUMBER_RATE", Value: "fast"})
			},
			want: `messaging: would not start: CHORUS_NUMBER_RATE="fast": want an integer >= 1`,
		},
		"container port": {
			drift: func(m *manifests) { container(m, "messaging").Ports[0].ContainerPort = 9100 },
			want:  "messaging: container port grpc is 9100, want 9103",
		},
		"grace shorter than the drain": {
			drift: func(m *manifests) {
				m.deployments["gateway"].Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64(15))
			},
			want: "gateway: terminationGracePeriodSeconds must exceed the preStop sleep and the drain (20s)",
		},
		"a caller shut out": {
			drift: func(m *manifests) {
				dropValue(&m.policies["messaging"].Spec.Ingress[0].From[0].PodSelector.MatchExpressions[0].Values, "campaigns")
			},
			want: "messaging: NetworkPolicies admit [gateway polls webhooks] to the gRPC port (open to others: false), want its callers [campaigns gateway polls webhooks]",
		},
		"a database reader shut out": {
			drift: func(m *manifests) {
				dropValue(&m.policies["postgresql"].Spec.Ingress[0].From[0].PodSelector.MatchExpressions[0].Values, "billing")
			},
			want: "NetworkPolicy postgresql admits [analytics campaigns contacts gateway messaging orgs polls webhooks], want the readers of CHORUS_DATABASE_URL [analytics billing campaigns contacts gateway messaging orgs polls webhooks]",
		},
		"a Secret in the manifests": {
			drift: func(m *manifests) { m.secrets = append(m.secrets, "chorus-orgs") },
			want:  "Secret chorus-orgs: secrets are referenced, never written in the manifests",
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := render(t, cmp.Or(tc.overlay, "overlays/dev"))
			tc.drift(m)
			assert.Equal(t, []string{tc.want}, check(m))
		})
	}
}
