package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// checkTarball opens an image tarball the way `docker load` does and checks what makes it run in the
// operator's pods: entrypoint, non-root user, labels, the files of its single layer.
func checkTarball(t *testing.T, path string, wantBinaries ...string) map[string][]byte {
	t.Helper()
	// The `docker save` layout: manifest.json names the config and the layers, with a repo tag.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "manifest.json" {
			if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest.json = %+v, want one tagged image with one layer", manifest)
	}

	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if strings.Join(c.Entrypoint, " ") != "/formsservice" {
		t.Errorf("entrypoint = %v", c.Entrypoint)
	}
	if c.User != "65532:65532" {
		t.Errorf("user = %q, want 65532:65532", c.User)
	}
	if cf.OS != "linux" || cf.Architecture == "" {
		t.Errorf("platform = %s/%s", cf.OS, cf.Architecture)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports = %v", c.ExposedPorts)
	}
	for _, l := range []string{"org.opencontainers.image.title", "org.opencontainers.image.source", "org.opencontainers.image.version",
		"org.opencontainers.image.revision", "org.opencontainers.image.created", "org.opencontainers.image.licenses"} {
		if c.Labels[l] == "" {
			t.Errorf("label %s missing (labels %v)", l, c.Labels)
		}
	}

	files := map[string][]byte{}
	modes := map[string]int64{}
	owners := map[string]int{}
	rc := mutate.Extract(img)
	defer rc.Close()
	fr := tar.NewReader(rc)
	for {
		h, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		modes[h.Name] = h.Mode
		owners[h.Name] = h.Uid
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(fr)
			files[h.Name] = b
		}
	}
	for _, b := range wantBinaries {
		if modes[b] != 0o755 || owners[b] != 0 {
			t.Errorf("%s: mode %o owner %d, want 755 owned by root (the non-root user cannot replace it)", b, modes[b], owners[b])
		}
	}
	if modes["tmp/"] != 0o1777 && modes["tmp"] != 0o1777 {
		t.Errorf("/tmp mode %o (entries %v)", modes["tmp/"], modes)
	}
	if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd = %q", files["etc/passwd"])
	}
	if !bytes.Contains(files["etc/ssl/certs/ca-certificates.crt"], []byte("BEGIN CERTIFICATE")) {
		t.Error("no CA bundle: SMTP STARTTLS and https webhooks could not verify their peers")
	}
	for name := range files {
		if strings.HasPrefix(name, "bin/") || strings.Contains(name, "sh") && !strings.HasPrefix(name, "etc/") {
			t.Errorf("unexpected file %s: the image has no shell", name)
		}
	}
	return files
}

func TestBuild_WritesALoadableNonRootImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "formsservice")
	if err := os.WriteFile(bin, []byte("\x7fELF stand-in"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	args := []string{"-out", out, "-tag", "example.test/fs:1", "-ca-certs", ca, "-binary", "/formsservice=" + bin,
		"-source-date-epoch", "1700000000",
		"-label", "org.opencontainers.image.title=formsservice", "-label", "org.opencontainers.image.source=https://example.test",
		"-label", "org.opencontainers.image.version=1", "-label", "org.opencontainers.image.revision=abc",
		"-label", "org.opencontainers.image.created=2023-11-14T22:13:20Z", "-label", "org.opencontainers.image.licenses=Apache-2.0"}
	var stdout bytes.Buffer
	if err := run(args, &stdout); err != nil {
		t.Fatal(err)
	}
	checkTarball(t, out, "formsservice")

	// Reproducible: the same inputs give the same digest.
	first := strings.Fields(stdout.String())[2]
	stdout.Reset()
	if err := run(args, &stdout); err != nil {
		t.Fatal(err)
	}
	if again := strings.Fields(stdout.String())[2]; again != first {
		t.Errorf("digest %s then %s for the same inputs", first, again)
	}

	// An entrypoint that is not in the image is refused.
	if err := run([]string{"-out", out, "-binary", "/manager=" + bin}, io.Discard); err == nil {
		t.Error("an image without its entrypoint was built")
	}
}

// TestImageTarball checks the tarball `make image` built, when hack/test.sh names it: both binaries are
// there, static (no dynamic loader on an empty base), for Linux.
func TestImageTarball_FromMakeImage(t *testing.T) {
	path := os.Getenv("FORMSSERVICE_IMAGE_TAR")
	if path == "" {
		t.Skip("FORMSSERVICE_IMAGE_TAR is not set: `make test` runs `make image` and sets it; TestBuild_WritesALoadableNonRootImage covers the builder")
	}
	files := checkTarball(t, path, "formsservice", "manager")
	for _, b := range []string{"formsservice", "manager"} {
		ef, err := elf.NewFile(bytes.NewReader(files[b]))
		if err != nil {
			t.Fatalf("%s is not an ELF binary: %v", b, err)
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked: it cannot run on an empty base", b)
			}
		}
	}
}
