package images_test

import (
	"archive/tar"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/deploy/images"
	"github.com/chorus-sms/chorus/pkg/devauth"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/servetest"
)

func TestMain(m *testing.M) { pgtest.Main(m, redistest.Close) }

// Every registry process's image, built as `make images` builds it and read back from its
// tarball, runs from its own filesystem as its own non-root user and answers /healthz: what a
// kubelet would see.
func TestEveryImageStartsAndAnswersHealthz(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the images hold linux binaries")
	}
	created := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	opts := images.Options{
		Root: "../..", Version: "test", Commit: "0123abc", Created: created,
		Arch: runtime.GOARCH, CAFile: "/etc/ssl/certs/ca-certificates.crt",
	}
	work, out := t.TempDir(), t.TempDir()
	start := time.Now()
	imgs, err := images.Build(t.Context(), opts, work, registry.All)
	require.NoError(t, err)
	t.Logf("built %d images in %s", len(imgs), time.Since(start).Round(time.Second))

	db := pgtest.NewDatabase(t) // one database, a schema per service, as in production
	redisURL, _ := redistest.New(t)
	for _, svc := range registry.All {
		t.Run(svc.Name, func(t *testing.T) {
			file, err := images.Write(out, svc, opts.Version, imgs[svc.Name])
			require.NoError(t, err)
			img, err := tarball.ImageFromPath(file, nil)
			require.NoError(t, err, "the tarball is readable as an image")

			cfg, err := img.ConfigFile()
			require.NoError(t, err)
			entry := "/usr/local/bin/" + svc.Name
			assert.Equal(t, []string{entry}, cfg.Config.Entrypoint)
			assert.Equal(t, "65532:65532", cfg.Config.User, "not root")
			assert.Equal(t, "linux", cfg.OS)
			assert.Equal(t, map[string]string{
				images.LabelTitle: svc.Name, images.LabelVersion: "test", images.LabelRevision: "0123abc",
				images.LabelCreated: "2026-11-24T06:00:00Z",
			}, cfg.Config.Labels)
			_, port, _ := strings.Cut(svc.Addr, ":")
			assert.Contains(t, cfg.Config.ExposedPorts, port+"/tcp")

			root := extract(t, img)
			bin := filepath.Join(root, entry)
			require.NoError(t, images.CheckStatic(bin), "static, with the time zone database")
			ca, err := os.ReadFile(filepath.Join(root, images.CAFile))
			require.NoError(t, err)
			assert.True(t, x509.NewCertPool().AppendCertsFromPEM(ca), "CA roots parse")
			passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
			require.NoError(t, err)
			assert.Contains(t, string(passwd), "nonroot:x:65532:65532:")

			vars, health := env(t, svc, db, redisURL)
			runAndProbe(t, svc, root, entry, vars, health)
		})
	}
}

// extract writes the image's filesystem to a directory others may traverse, so the binary
// can run as the image's user.
func extract(t *testing.T, img v1.Image) string {
	t.Helper()
	root := t.TempDir()
	for dir := root; dir != os.TempDir() && dir != "/"; dir = filepath.Dir(dir) {
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return root
		}
		require.NoError(t, err)
		target := filepath.Join(root, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(target, 0o755))
		case tar.TypeReg:
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode))
			require.NoError(t, err)
			_, err = io.Copy(f, tr)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		default:
			t.Fatalf("unexpected %q of type %c in the image", h.Name, h.Typeflag)
		}
	}
}

// env is what the process's Deployment gives it, pointed at this machine's PostgreSQL and
// Redis and at free ports; the second result is the URL its kubelet probes.
func env(t *testing.T, svc registry.Service, db, redisURL string) ([]string, string) {
	t.Helper()
	listen := servetest.ClosedAddr(t)
	vars := []string{
		"CHORUS_DATABASE_URL=" + db, "CHORUS_REDIS_URL=" + redisURL, svc.Protocol.ListenVar() + "=" + listen,
	}
	health := "http://" + listen + "/healthz"
	if svc.OpsPort != 0 {
		ops := servetest.ClosedAddr(t)
		vars = append(vars, "CHORUS_OPS_ADDR="+ops)
		health = "http://" + ops + "/healthz"
	}
	if svc.Protocol == registry.HTTP { // the gateway fetches its identity provider's keys at start
		key, err := devauth.LoadOrCreate(filepath.Join(t.TempDir(), "key.pem"))
		require.NoError(t, err)
		idp := httptest.NewServer(key.Handler())
		t.Cleanup(idp.Close)
		vars = append(vars, "CHORUS_JWT_JWKS_URL="+idp.URL, "CHORUS_JWT_ISSUER="+devauth.Issuer, "CHORUS_JWT_AUDIENCE="+devauth.Audience)
	}
	return vars, health
}

// runAndProbe starts the image's entrypoint from its filesystem, waits for /healthz, then
// stops it as Kubernetes does (SIGTERM) and expects a clean exit within its drain.
func runAndProbe(t *testing.T, svc registry.Service, root, entry string, vars []string, health string) {
	t.Helper()
	var logs strings.Builder
	cmd := exec.Command(filepath.Join(root, entry))
	cmd.Dir = root
	cmd.Env = vars
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if os.Geteuid() == 0 { // run as the image's user, as the pod does
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: images.UID, Gid: images.UID}}
	}
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", svc.Name, logs.String())
		}
	})

	healthy := assert.EventuallyWithT(t, func(c *assert.CollectT) {
		resp, err := http.Get(health)
		if !assert.NoError(c, err) {
			return
		}
		_ = resp.Body.Close()
		assert.Equal(c, http.StatusOK, resp.StatusCode)
	}, time.Minute, 100*time.Millisecond, "%s answers %s", svc.Name, health)
	if !healthy {
		return
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		assert.NoError(t, err, "a clean exit on SIGTERM")
	case <-time.After(svc.Drain + 5*time.Second):
		t.Errorf("%s still running %s after SIGTERM", svc.Name, svc.Drain+5*time.Second)
	}
}
