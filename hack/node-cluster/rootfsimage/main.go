// Command rootfsimage packs a folder into a one-layer image tarball (`docker save` format, which
// `ctr images import` reads) for the node cluster of hack/node-cluster: the pause image, CoreDNS and the
// Redis image made of Debian's redis-server. Files keep their mode; symlinks stay symlinks; owner root.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	dir := flag.String("dir", "", "the folder that becomes the image's root")
	out := flag.String("out", "", "the tarball to write")
	tag := flag.String("tag", "", "the image's name:tag")
	entrypoint := flag.String("entrypoint", "", "the entrypoint, words separated by spaces (empty: none)")
	user := flag.String("user", "", "uid:gid the image runs as (empty: root)")
	flag.Parse()
	if err := run(*dir, *out, *tag, *entrypoint, *user); err != nil {
		fmt.Fprintln(os.Stderr, "rootfsimage:", err)
		os.Exit(1)
	}
}

func run(dir, out, tag, entrypoint, user string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	layerTar, err := tarFolder(dir)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config = v1.Config{User: user, WorkingDir: "/", Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}
	if entrypoint != "" {
		cf.Config.Entrypoint = strings.Fields(entrypoint)
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if err := tarball.WriteToFile(out+".tmp", ref, img); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}

// tarFolder writes dir as a tar stream with fixed times and root ownership, so that the same folder
// gives the same layer.
func tarFolder(dir string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), epoch, 0, 0, "", ""
		h.AccessTime, h.ChangeTime = time.Time{}, time.Time{}
		if d.IsDir() {
			h.Name += "/"
		}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
