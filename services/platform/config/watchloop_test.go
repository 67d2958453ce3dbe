package config

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
)

// These tests run Watch's event loop in a synctest bubble, with the channels the fsnotify watcher and
// the poll ticker would feed: the bubble's clock moves only when every goroutine in it waits, so the
// debounce is measured exactly, however busy the machine is. (A real fsnotify watcher cannot run in a
// bubble: its reader goroutine blocks in a system call, which does not count as waiting.) The tests
// with real files are in watcher_test.go.

// loopRig is a Watcher whose loads are counted, and the inputs of its loop.
type loopRig struct {
	s      *Watcher
	loads  atomic.Int64 // NewWatcher's load included
	stamp  atomic.Int64 // the file's current stamp, as its size
	events chan fsnotify.Event
	errs   chan error
	poll   chan time.Time
	cancel context.CancelFunc
	done   chan error // the loop's return
}

// startLoop runs the loop of a Watcher whose file's stamp was loaded when NewWatcher read it, and is
// current when the loop starts.
func startLoop(t *testing.T, loaded, current int64) *loopRig {
	t.Helper()
	r := &loopRig{events: make(chan fsnotify.Event), errs: make(chan error), poll: make(chan time.Time), done: make(chan error, 1)}
	// The path names the file events are about; nothing reads it (the stamp comes from the test).
	s, err := NewWatcher("/etc/formsservice/config.yaml", func() (*Config, error) { r.loads.Add(1); return &Config{}, nil }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s.loaded = fileStamp{size: loaded}
	r.s = s
	r.stamp.Store(current)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		r.done <- s.loop(ctx, r.events, r.errs, r.poll, func() fileStamp { return fileStamp{size: r.stamp.Load()} })
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	synctest.Wait() // the loop has taken its first stamp
	return r
}

// reloads is how many times the loop has reloaded, once every goroutine of the bubble waits.
func (r *loopRig) reloads() int64 {
	synctest.Wait()
	return r.loads.Load() - 1
}

// Two events 99ms apart reload once, exactly debounce (100ms) after the last one.
func TestWatchLoop_DebouncesABurst_ReloadsOnce100msAfterTheLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startLoop(t, 1, 1)
		r.events <- fsnotify.Event{Name: "config.yaml", Op: fsnotify.Write}
		time.Sleep(99 * time.Millisecond) // fake time: the bubble's clock
		if n := r.reloads(); n != 0 {
			t.Fatalf("%d reloads 99ms after the first event, want 0", n)
		}
		r.events <- fsnotify.Event{Name: "config.yaml", Op: fsnotify.Write}
		last := time.Now()
		time.Sleep(99 * time.Millisecond) // fake time: the bubble's clock
		if n := r.reloads(); n != 0 {
			t.Fatalf("%d reloads 99ms after the last event (198ms after the first), want 0: the debounce did not restart", n)
		}
		time.Sleep(time.Millisecond) // fake time: exactly debounce after the last event
		if n := r.reloads(); n != 1 {
			t.Fatalf("%d reloads exactly %s after the last event, want 1", n, time.Since(last))
		}
		select {
		case <-r.s.Reloaded():
		default:
			t.Fatal("the reload was not signalled on Reloaded()")
		}
		time.Sleep(time.Hour) // fake time: an hour in which nothing more comes in, so nothing more is reloaded
		if n := r.reloads(); n != 1 {
			t.Fatalf("%d reloads an hour after one burst, want 1", n)
		}
	})
}

// Events about other files in the configuration's directory reload nothing while the configuration's
// stamp stays the same: a log file written there many times a second once caused 153 reloads in 15 s.
// The file's own events, the kubelet's ..data swap, and another file's event that comes with a changed
// stamp (the configuration is a symlink to it) still reload.
func TestWatchLoop_OtherFilesInTheDirectory_DoNotReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startLoop(t, 1, 1)
		for range 150 {
			r.events <- fsnotify.Event{Name: "/etc/formsservice/forms.log", Op: fsnotify.Write}
			time.Sleep(100 * time.Millisecond) // fake time: 15 s of a log written ten times a second
		}
		time.Sleep(time.Second)
		if n := r.reloads(); n != 0 {
			t.Fatalf("%d reloads for a log file written beside the configuration, want 0", n)
		}
		for i, ev := range []string{"/etc/formsservice/config.yaml", "/etc/formsservice/..data"} {
			r.events <- fsnotify.Event{Name: ev, Op: fsnotify.Create}
			time.Sleep(time.Second)
			if n := r.reloads(); n != int64(i+1) {
				t.Fatalf("%d reloads after an event on %s, want %d", n, ev, i+1)
			}
		}
		r.stamp.Store(2) // the configuration changed, and the event names its symlink's target
		r.events <- fsnotify.Event{Name: "/etc/formsservice/real-config.yaml", Op: fsnotify.Write}
		time.Sleep(time.Second)
		if n := r.reloads(); n != 3 {
			t.Fatalf("%d reloads after another file's event with the configuration changed, want 3", n)
		}
	})
}

// A poll tick that finds the file changed reloads at once; one that finds it as last reloaded does not.
func TestWatchLoop_PollTick_ReloadsAtOnceOnlyWhenTheStampChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startLoop(t, 1, 1)
		r.poll <- time.Now()
		if n := r.reloads(); n != 0 {
			t.Fatalf("%d reloads after a tick with the file unchanged, want 0", n)
		}
		r.stamp.Store(2)
		start := time.Now()
		r.poll <- time.Now()
		if n := r.reloads(); n != 1 {
			t.Fatalf("%d reloads after a tick with the file changed, want 1", n)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("the reload came %s after the tick, want at once", d)
		}
		r.poll <- time.Now() // the reloaded stamp is now the last one
		if n := r.reloads(); n != 1 {
			t.Fatalf("%d reloads after a second tick on the same file, want 1", n)
		}
	})
}

// A file changed between NewWatcher's read and the loop's start reloads at once, with no event.
func TestWatchLoop_ChangedBeforeTheLoopStarted_ReloadsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startLoop(t, 1, 2)
		if n := r.reloads(); n != 1 {
			t.Fatalf("%d reloads at the start with the file changed since it was read, want 1", n)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		r := startLoop(t, 1, 1)
		if n := r.reloads(); n != 0 {
			t.Fatalf("%d reloads at the start with the file as it was read, want 0", n)
		}
	})
}

// A watch error is logged, not a reload; the loop returns when ctx ends, and when the watcher's
// channels close.
func TestWatchLoop_ReturnsWhenCtxEndsOrTheWatcherCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startLoop(t, 1, 1)
		r.errs <- errors.New("queue overflow")
		if n := r.reloads(); n != 0 {
			t.Fatalf("%d reloads after a watch error, want 0", n)
		}
		r.cancel()
		synctest.Wait()
		select {
		case err := <-r.done:
			if err != nil {
				t.Fatalf("loop returned %v at the end of ctx, want nil", err)
			}
			r.done <- err // for the cleanup
		default:
			t.Fatal("the loop did not return when ctx ended")
		}
	})
	for _, which := range []string{"events", "errors"} {
		synctest.Test(t, func(t *testing.T) {
			r := startLoop(t, 1, 1)
			if which == "events" {
				close(r.events)
			} else {
				close(r.errs)
			}
			synctest.Wait()
			select {
			case err := <-r.done:
				r.done <- err
			default:
				t.Fatalf("the loop did not return when the watcher's %s channel closed", which)
			}
		})
	}
}
