package config

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Source gives the current configuration. Services call Current on every request (one atomic load) so
// that a reloaded file takes effect without a restart.
type Source interface {
	Current() *Config
}

// Static is a Source that never changes (tests, one-shot commands).
type Static struct{ C *Config }

// Current returns the configuration.
func (s Static) Current() *Config { return s.C }

// Watcher holds the live configuration and reloads it when its file changes.
type Watcher struct {
	cur     atomic.Pointer[Config]
	path    string
	load    func() (*Config, error)
	log     *slog.Logger
	changed chan struct{}
	loaded  fileStamp // of the file NewWatcher read: Watch reloads at once if it changed since
}

// NewWatcher loads the configuration once with load (which reads path) and returns a Watcher serving it.
func NewWatcher(path string, load func() (*Config, error), log *slog.Logger) (*Watcher, error) {
	stamp := stampOf(path) // before reading: a write during the load shows as a change
	c, err := load()
	if err != nil {
		return nil, err
	}
	s := &Watcher{path: path, load: load, log: log, changed: make(chan struct{}, 1), loaded: stamp}
	s.cur.Store(c)
	return s, nil
}

// Current returns the configuration in effect.
func (s *Watcher) Current() *Config { return s.cur.Load() }

// Reloaded is signalled (without blocking) after each successful reload; tests wait on it.
func (s *Watcher) Reloaded() <-chan struct{} { return s.changed }

// Reload reads the file again. A file that no longer parses or validates is logged and ignored: the
// service keeps its last good configuration rather than failing open or crashing.
func (s *Watcher) Reload() error {
	c, err := s.load()
	if err != nil {
		s.log.Error("config reload failed; keeping the previous configuration", "path", s.path, "err", err)
		return err
	}
	s.cur.Store(c)
	s.log.Info("config reloaded", "path", s.path, "allowedOrigins", len(c.AllowedOrigins), "clients", len(c.Auth.Clients))
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return nil
}

// Watch reloads the file whenever it changes until ctx ends. It watches the directory, not the file,
// because Kubernetes updates a mounted ConfigMap by swapping a symlink (..data), which a watch on the
// old file would never see. Only the file's own events (and the kubelet's ..data swap) reload; any other
// file in the directory (a log written beside the configuration) reloads only if the configuration's
// stamp changed with it. Events are debounced so that one update reloads once.
func (s *Watcher) Watch(ctx context.Context) error {
	if s.path == "" {
		<-ctx.Done()
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(s.path)); err != nil {
		return err
	}
	poll := time.NewTicker(pollInterval) // belt and braces for filesystems without inotify
	defer poll.Stop()
	return s.loop(ctx, w.Events, w.Errors, poll.C, func() fileStamp { return stampOf(s.path) })
}

// The watch's timing: a burst of events reloads once, debounce after the last; the file is also
// compared with its last reloaded version every pollInterval.
const (
	debounce     = 100 * time.Millisecond
	pollInterval = 10 * time.Second
)

// loop is Watch without the fsnotify wiring: file events, watch errors and poll ticks come in on
// channels, stamp reads the file's current stamp, and reloads go out through Reload. Apart from the
// watcher, whose reader goroutine blocks in a system call, the loop's time is only its timers, so a test
// can run it in a synctest bubble with channels it feeds. It returns when ctx ends or events or errs
// closes.
func (s *Watcher) loop(ctx context.Context, events <-chan fsnotify.Event, errs <-chan error, poll <-chan time.Time, stamp func() fileStamp) error {
	// A change between NewWatcher's read and this watch has no event of its own: compare stamps.
	last := stamp()
	var reload <-chan time.Time
	if !last.same(s.loaded) {
		reload = time.After(0)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if s.ownEvent(ev.Name) || !stamp().same(last) {
				reload = time.After(debounce)
			}
		case err, ok := <-errs:
			if !ok {
				return nil
			}
			s.log.Warn("config watch error", "err", err)
		case <-poll:
			if st := stamp(); !st.same(last) {
				reload = time.After(0)
			}
		case <-reload:
			reload = nil
			last = stamp()
			_ = s.Reload()
		}
	}
}

// ownEvent reports an event about the configuration file itself, or about the kubelet's atomic update
// of a mounted ConfigMap: it writes a new ..<timestamp> directory and swaps the ..data symlink, through
// which the file's path resolves.
func (s *Watcher) ownEvent(name string) bool {
	base := filepath.Base(name)
	return base == filepath.Base(s.path) || strings.HasPrefix(base, "..")
}

// fileStamp tells versions of the configuration file apart; the size too, since two writes within one
// tick of a coarse filesystem clock share a modification time.
type fileStamp struct {
	mod  time.Time
	size int64
}

func (a fileStamp) same(b fileStamp) bool { return a.mod.Equal(b.mod) && a.size == b.size }

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path) // follows the ..data symlink
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{fi.ModTime(), fi.Size()}
}
