// Package images builds one OCI image per Chorus process on this machine, with no registry and
// no container daemon: the process's static binary (CGO off, the IANA time zone database
// compiled in), the machine's CA roots and a passwd entry for a non-root user, in one layer on
// an empty base. Nothing is pulled, so the images are as reproducible as the binaries.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/chorus-sms/chorus/pkg/registry"
)

// The image's fixed layout: where the binary and the CA roots are, and who runs it. The
// Deployments run as the same user (runAsUser), so a pod never runs as root even where the
// runtime ignores the image's user.
const (
	BinDir    = "/usr/local/bin"
	CAFile    = "/etc/ssl/certs/ca-certificates.crt"
	UID       = 65532
	User      = "65532:65532"
	Repo      = "chorus/" // image names are Repo + the registry name, as the manifests give them
	buildTags = "timetzdata"
)

// OCI annotation keys the images are labelled with.
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
)

// Options say what to build and how to label it.
type Options struct {
	Root    string    // the repository root (its go.work builds every binary)
	Version string    // image tag and version label
	Commit  string    // revision label
	Created time.Time // image and file times: the commit's time keeps images reproducible
	Arch    string    // GOARCH of the images
	CAFile  string    // the CA bundle copied into each image
}

// Ref is where an image is written and what it is tagged.
func Ref(svc registry.Service, version string) string { return Repo + svc.Name + ":" + version }

// Build compiles the binaries of svcs into workDir with one go build (so the packages they
// share compile once) and returns each one's image, by registry name.
func Build(ctx context.Context, opts Options, workDir string, svcs []registry.Service) (map[string]v1.Image, error) {
	ca, err := os.ReadFile(opts.CAFile)
	if err != nil {
		return nil, fmt.Errorf("images: CA roots: %w", err)
	}
	args := []string{"build", "-trimpath", "-tags", buildTags, "-ldflags", "-s -w", "-o", workDir + string(os.PathSeparator)}
	for _, svc := range svcs {
		if path.Base(svc.Main) != svc.Name {
			return nil, fmt.Errorf("images: %s: binary directory %s must end in the service's name", svc.Name, svc.Main)
		}
		args = append(args, "./"+svc.Main)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = opts.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+opts.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("images: go build: %w\n%s", err, out)
	}
	imgs := make(map[string]v1.Image, len(svcs))
	for _, svc := range svcs {
		bin := filepath.Join(workDir, svc.Name)
		if err := CheckStatic(bin); err != nil {
			return nil, err
		}
		img, err := image(opts, svc, bin, ca)
		if err != nil {
			return nil, fmt.Errorf("images: %s: %w", svc.Name, err)
		}
		imgs[svc.Name] = img
	}
	return imgs, nil
}

// Write writes img to dir as a tarball tagged Ref, which `docker load`, `kind load
// image-archive` and `ctr images import` all read; it returns the file's path.
func Write(dir string, svc registry.Service, version string, img v1.Image) (string, error) {
	tag, err := name.NewTag(Ref(svc, version))
	if err != nil {
		return "", fmt.Errorf("images: %s: %w", svc.Name, err)
	}
	file := filepath.Join(dir, svc.Name+".tar")
	if err := tarball.WriteToFile(file, tag, img); err != nil {
		return "", fmt.Errorf("images: write %s: %w", file, err)
	}
	return file, nil
}

// CheckStatic refuses a binary that needs a dynamic loader or shared libraries (an empty
// base has none) or that lacks the compiled-in time zone database.
func CheckStatic(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			return fmt.Errorf("images: %s is dynamically linked (was cgo used?)", bin)
		}
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	for _, s := range info.Settings {
		if s.Key == "-tags" && strings.Contains(s.Value, buildTags) {
			return nil
		}
	}
	return fmt.Errorf("images: %s was built without -tags %s: time zones would be missing", bin, buildTags)
}

func image(opts Options, svc registry.Service, bin string, ca []byte) (v1.Image, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	layerTar, err := rootfs(opts.Created, svc.Name, exe, ca)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, err
	}
	ports := map[string]struct{}{}
	if _, p, err := net.SplitHostPort(svc.Addr); err == nil {
		ports[p+"/tcp"] = struct{}{}
	}
	if svc.OpsPort != 0 {
		ports[strconv.Itoa(svc.OpsPort)+"/tcp"] = struct{}{}
	}
	cfg := &v1.ConfigFile{
		Architecture: opts.Arch,
		OS:           "linux",
		Created:      v1.Time{Time: opts.Created},
		Config: v1.Config{
			Entrypoint:   []string{path.Join(BinDir, svc.Name)},
			User:         User,
			WorkingDir:   "/",
			Env:          []string{"PATH=" + BinDir, "SSL_CERT_FILE=" + CAFile},
			ExposedPorts: ports,
			Labels: map[string]string{
				LabelTitle:    svc.Name,
				LabelVersion:  opts.Version,
				LabelRevision: opts.Commit,
				LabelCreated:  opts.Created.UTC().Format(time.RFC3339),
			},
		},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: opts.Created}, CreatedBy: "chorus images: " + svc.Main,
	}})
}

// rootfs is the image's only layer: the binary, the CA roots, and passwd and group files that
// name the non-root user (so tools that resolve the user find it). Nothing else is writable or
// needed: the processes write no files, so the root filesystem can be read-only.
func rootfs(mtime time.Time, name string, exe, ca []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(p string, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: 0o755, Uid: uid, Gid: uid, ModTime: mtime})
	}
	file := func(p string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data)), ModTime: mtime}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	id := strconv.Itoa(UID)
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:" + id + ":" + id + ":nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnonroot:x:" + id + ":\n"
	for _, step := range []func() error{
		func() error { return dir("etc", 0) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("etc/ssl", 0) },
		func() error { return dir("etc/ssl/certs", 0) },
		func() error { return file(strings.TrimPrefix(CAFile, "/"), 0o644, ca) },
		func() error { return dir("home", 0) },
		func() error { return dir("home/nonroot", UID) },
		func() error { return dir("usr", 0) },
		func() error { return dir("usr/local", 0) },
		func() error { return dir("usr/local/bin", 0) },
		func() error { return file(strings.TrimPrefix(path.Join(BinDir, name), "/"), 0o755, exe) },
		tw.Close,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
