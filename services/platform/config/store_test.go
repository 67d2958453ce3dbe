package config

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func newWatchedStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := NewStore(path, func() (*Config, error) { return Load(path, nil) }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Watch(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	time.Sleep(50 * time.Millisecond) // let the watcher register
	return s
}

func waitReload(t *testing.T, s *Store) {
	t.Helper()
	select {
	case <-s.Reloaded():
	case <-time.After(5 * time.Second):
		t.Fatal("no reload within 5s")
	}
}

func TestStore_ReloadsWhenTheFileIsRewritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	write(t, path, "allowedOrigins: [https://a.example]\n")
	s := newWatchedStore(t, path)
	write(t, path, "allowedOrigins: [https://b.example]\n")
	waitReload(t, s)
	if got := s.Current().AllowedOrigins; len(got) != 1 || got[0] != "https://b.example" {
		t.Fatalf("origins after reload = %v", got)
	}
}

// Kubernetes updates a mounted ConfigMap by pointing the ..data symlink at a new directory.
func TestStore_ReloadsOnConfigMapSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "..v1", "config.yaml"), "allowedOrigins: [https://a.example]\n")
	must(t, os.Symlink("..v1", filepath.Join(dir, "..data")))
	must(t, os.Symlink(filepath.Join("..data", "config.yaml"), filepath.Join(dir, "config.yaml")))
	s := newWatchedStore(t, filepath.Join(dir, "config.yaml"))

	write(t, filepath.Join(dir, "..v2", "config.yaml"), "allowedOrigins: [https://c.example]\n")
	must(t, os.Symlink("..v2", filepath.Join(dir, "..data_tmp")))
	must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	waitReload(t, s)
	if got := s.Current().AllowedOrigins; len(got) != 1 || got[0] != "https://c.example" {
		t.Fatalf("origins after swap = %v", got)
	}
}

func TestStore_KeepsLastGoodConfigWhenTheFileBreaks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	write(t, path, "allowedOrigins: [https://a.example]\n")
	s, err := NewStore(path, func() (*Config, error) { return Load(path, nil) }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	must(t, err)
	write(t, path, "allowedOrigins: [not an origin]\n")
	if err := s.Reload(); err == nil {
		t.Fatal("reload of a broken file should fail")
	}
	if got := s.Current().AllowedOrigins; len(got) != 1 || got[0] != "https://a.example" {
		t.Fatalf("origins after a broken reload = %v", got)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	tmp := path + ".tmp"
	must(t, os.WriteFile(tmp, []byte(data), 0o600))
	must(t, os.Rename(tmp, path))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
