// Command images builds one OCI image per registry process into a directory of tarballs
// (`make images` writes bin/images/<name>.tar), with no registry access and no container
// daemon. It prints each image's file, id and size.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/chorus-sms/chorus/deploy/images"
	"github.com/chorus-sms/chorus/pkg/registry"
)

func main() {
	var (
		opts    images.Options
		out     = flag.String("out", "bin/images", "directory the image tarballs are written to")
		created = flag.String("created", "", "image creation time, RFC 3339 (default: now); the commit's time makes images reproducible")
	)
	flag.StringVar(&opts.Root, "root", ".", "repository root")
	flag.StringVar(&opts.Version, "version", "dev", "image tag and version label")
	flag.StringVar(&opts.Commit, "commit", "unknown", "revision label")
	flag.StringVar(&opts.Arch, "arch", runtime.GOARCH, "GOARCH of the images")
	flag.StringVar(&opts.CAFile, "ca", "/etc/ssl/certs/ca-certificates.crt", "CA bundle copied into each image")
	flag.Parse()
	if err := run(opts, *out, *created); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(opts images.Options, out, created string) error {
	opts.Created = time.Now().UTC().Truncate(time.Second)
	if created != "" {
		t, err := time.Parse(time.RFC3339, created)
		if err != nil {
			return fmt.Errorf("-created: %w", err)
		}
		opts.Created = t.UTC()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "chorus-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	imgs, err := images.Build(context.Background(), opts, work, registry.All)
	if err != nil {
		return err
	}
	for _, svc := range registry.All {
		file, err := images.Write(out, svc, opts.Version, imgs[svc.Name])
		if err != nil {
			return err
		}
		st, err := os.Stat(file)
		if err != nil {
			return err
		}
		id, err := imgs[svc.Name].ConfigName() // the image id docker and ctr show once loaded
		if err != nil {
			return err
		}
		fmt.Printf("%-10s %s  %s  %.1f MiB\n", svc.Name, file, id, float64(st.Size())/(1<<20))
	}
	return nil
}
