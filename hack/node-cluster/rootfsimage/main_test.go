package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestRun_PacksFolderWithModesSymlinksAndConfig(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "usr/local/bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "usr/local/bin/tool"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Symlink("usr/local/bin/tool", filepath.Join(dir, "tool")))
	must(t, os.Mkdir(filepath.Join(dir, "tmp"), 0o777))
	must(t, os.Chmod(filepath.Join(dir, "tmp"), os.ModeSticky|0o777))
	out := filepath.Join(t.TempDir(), "image.tar")

	must(t, run(dir, out, "example.local/tool:1", "/tool -v", "999:999"))

	tag, _ := name.NewTag("example.local/tool:1")
	img, err := tarball.ImageFromPath(out, &tag)
	must(t, err)
	cf, err := img.ConfigFile()
	must(t, err)
	if got := cf.Config.Entrypoint; len(got) != 2 || got[0] != "/tool" || got[1] != "-v" {
		t.Errorf("entrypoint = %q, want [/tool -v]", got)
	}
	if cf.Config.User != "999:999" || cf.OS != "linux" {
		t.Errorf("user, os = %q, %q", cf.Config.User, cf.OS)
	}
	layers, err := img.Layers()
	must(t, err)
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	must(t, err)
	defer rc.Close()
	got := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		got[h.Name] = h
	}
	if h := got["usr/local/bin/tool"]; h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o777 != 0o755 || h.Uid != 0 {
		t.Errorf("usr/local/bin/tool: %+v", h)
	}
	if h := got["tool"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "usr/local/bin/tool" {
		t.Errorf("tool symlink: %+v", h)
	}
	if h := got["tmp/"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o7777 != 0o1777 {
		t.Errorf("tmp/: %+v", h)
	}

	// The same folder gives the same image (no access or change times in the layer).
	again := filepath.Join(t.TempDir(), "again.tar")
	must(t, run(dir, again, "example.local/tool:1", "/tool -v", "999:999"))
	img2, err := tarball.ImageFromPath(again, &tag)
	must(t, err)
	d1, err := img.Digest()
	must(t, err)
	d2, err := img2.Digest()
	must(t, err)
	if d1 != d2 {
		t.Errorf("digests differ: %s, %s", d1, d2)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
