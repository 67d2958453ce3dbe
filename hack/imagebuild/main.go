// Command imagebuild packs static binaries into a container image tarball without a Docker engine:
// one layer on an empty base (no shell, no package manager), a non-root user, OCI labels. The tarball
// is in the `docker save` format, which `docker load`, `podman load` and `kind load image-archive` read.
// hack/image.sh (`make image`) builds the binaries and calls it.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// UID is the non-root user the image runs as (distroless's "nonroot").
const UID = 65532

// Options describe the image.
type Options struct {
	// Binaries maps a path in the image ("/formsservice") to a file on disk.
	Binaries map[string]string
	// Entrypoint is the binary the image runs.
	Entrypoint string
	// CACerts is a PEM bundle copied to /etc/ssl/certs/ca-certificates.crt (SMTP STARTTLS, webhooks).
	CACerts string
	Arch    string
	// Created is the image's creation time and every file's mtime (SOURCE_DATE_EPOCH), so that the
	// same inputs give the same image digest.
	Created time.Time
	Labels  map[string]string
}

// Build assembles the image.
func Build(o Options) (v1.Image, error) {
	if _, ok := o.Binaries[o.Entrypoint]; !ok {
		return nil, fmt.Errorf("entrypoint %s is not among the binaries", o.Entrypoint)
	}
	layerTar, err := rootfs(o)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: o.Created},
			CreatedBy: "hack/imagebuild: static binaries on an empty base",
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture = o.Arch
	cf.OS = "linux"
	cf.Created = v1.Time{Time: o.Created}
	cf.Config = v1.Config{
		Entrypoint:   []string{o.Entrypoint},
		User:         fmt.Sprintf("%d:%d", UID, UID),
		WorkingDir:   "/",
		Env:          []string{"PATH=/", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Labels:       o.Labels,
	}
	return mutate.ConfigFile(img, cf)
}

// rootfs is the single layer: the binaries, a CA bundle, /etc/passwd and /etc/group naming the non-root
// user, and a world-writable /tmp (the pods mount an emptyDir there; the read-only root stays read-only).
func rootfs(o Options) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(path string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path, Mode: mode, ModTime: o.Created, Format: tar.FormatPAX})
	}
	file := func(path string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: mode, Size: int64(len(data)), ModTime: o.Created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, d := range []string{"etc/", "etc/ssl/", "etc/ssl/certs/"} {
		if err := dir(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := dir("tmp/", 0o1777); err != nil {
		return nil, err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID)
	if err := file("etc/passwd", 0o644, []byte(passwd)); err != nil {
		return nil, err
	}
	if err := file("etc/group", 0o644, []byte(group)); err != nil {
		return nil, err
	}
	if o.CACerts != "" {
		pem, err := os.ReadFile(o.CACerts)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: %w", err)
		}
		if err := file("etc/ssl/certs/ca-certificates.crt", 0o644, pem); err != nil {
			return nil, err
		}
	}
	paths := make([]string, 0, len(o.Binaries))
	for p := range o.Binaries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		data, err := os.ReadFile(o.Binaries[p])
		if err != nil {
			return nil, err
		}
		if err := file(strings.TrimPrefix(p, "/"), 0o755, data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write saves img as a `docker save` tarball tagged tag.
func Write(path, tag string, img v1.Image) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

type kvFlag map[string]string

func (f kvFlag) String() string { return fmt.Sprint(map[string]string(f)) }
func (f kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return errors.New("want key=value")
	}
	f[k] = v
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	out := fl.String("out", "bin/formsservice-image.tar", "the tarball to write")
	tag := fl.String("tag", "ghcr.io/formsservice/formsservice:dev", "the image's name and tag inside the tarball")
	entrypoint := fl.String("entrypoint", "/formsservice", "the binary the image runs")
	caCerts := fl.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of trusted CAs (empty: none)")
	arch := fl.String("arch", "amd64", "GOARCH of the binaries")
	epoch := fl.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "creation time in Unix seconds (default: now)")
	binaries, labels := kvFlag{}, kvFlag{}
	fl.Var(binaries, "binary", "path-in-image=file-on-disk; repeat for each binary")
	fl.Var(labels, "label", "key=value image label; repeat")
	if err := fl.Parse(args); err != nil {
		return err
	}
	created := time.Now().UTC().Truncate(time.Second)
	if *epoch != "" {
		secs, err := strconv.ParseInt(*epoch, 10, 64)
		if err != nil {
			return fmt.Errorf("source-date-epoch: %w", err)
		}
		created = time.Unix(secs, 0).UTC()
	}
	img, err := Build(Options{Binaries: binaries, Entrypoint: *entrypoint, CACerts: *caCerts, Arch: *arch, Created: created, Labels: labels})
	if err != nil {
		return err
	}
	if err := Write(*out, *tag, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s %s\n", *out, *tag, digest)
	return nil
}
