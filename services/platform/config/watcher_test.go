package config

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"
)

func newWatcher(t *testing.T, path string) *Watcher {
	t.Helper()
	s, err := NewWatcher(path, func() (*Config, error) { return Load(path, nil) }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Watch(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// waitOrigins waits until the store serves exactly the origins want. It polls the condition rather than
// trusting the first reload: a slow test can be seen half-way through writing, and that reload serves
// the old file. The debounce itself is measured on a fake clock (watchloop_test.go); here only the
// outcome is awaited.
func waitOrigins(t *testing.T, s *Watcher, within time.Duration, want ...string) {
	t.Helper()
	testwait.Until(t, within, fmt.Sprintf("origins %v", want), func() error {
		if got := s.Current().AllowedOrigins; !slices.Equal(got, want) {
			return fmt.Errorf("serving %v", got)
		}
		return nil
	})
}

func TestWatcher_ReloadsWhenTheFileIsRewritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	write(t, path, "allowedOrigins: [https://a.example]\n")
	s := newWatcher(t, path)
	write(t, path, "allowedOrigins: [https://bb.example]\n") // another size: see fileStamp
	waitOrigins(t, s, 5*time.Second, "https://bb.example")
}

// A file rewritten after the first read but before the watch began has no event of its own; it is
// still taken up at once, not at the next 10 s poll.
func TestWatcher_ChangeBeforeTheWatchStarted_IsTakenUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	write(t, path, "allowedOrigins: [https://a.example]\n")
	s, err := NewWatcher(path, func() (*Config, error) { return Load(path, nil) }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, "allowedOrigins: [https://bb.example]\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Watch(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitOrigins(t, s, 3*time.Second, "https://bb.example")
}

// Kubernetes updates a mounted ConfigMap by pointing the ..data symlink at a new directory.
func TestWatcher_ReloadsOnConfigMapSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "..v1", "config.yaml"), "allowedOrigins: [https://a.example]\n")
	must(t, os.Symlink("..v1", filepath.Join(dir, "..data")))
	must(t, os.Symlink(filepath.Join("..data", "config.yaml"), filepath.Join(dir, "config.yaml")))
	s := newWatcher(t, filepath.Join(dir, "config.yaml"))

	write(t, filepath.Join(dir, "..v2", "config.yaml"), "allowedOrigins: [https://cc.example]\n")
	must(t, os.Symlink("..v2", filepath.Join(dir, "..data_tmp")))
	must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	waitOrigins(t, s, 5*time.Second, "https://cc.example")
}

func TestWatcher_KeepsLastGoodConfigWhenTheFileBreaks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	write(t, path, "allowedOrigins: [https://a.example]\n")
	s, err := NewWatcher(path, func() (*Config, error) { return Load(path, nil) }, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
