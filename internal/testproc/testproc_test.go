package testproc

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf ends only the calling goroutine and keeps the message, so
// that a test can check how a helper fails.
type fatalRecorder struct {
	testing.TB
	msg chan string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg <- fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatal runs fn with a recorder and returns its Fatalf message, or "" when fn returned.
func fatal(t *testing.T, fn func(tb testing.TB)) string {
	rec := &fatalRecorder{TB: t, msg: make(chan string, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(rec)
	}()
	<-done
	select {
	case m := <-rec.msg:
		return m
	default:
		return ""
	}
}

func TestWaitReady_AProcessThatExitsFailsAtOnceWithItsOutput(t *testing.T) {
	start := time.Now()
	msg := fatal(t, func(tb testing.TB) {
		p := StartCmd(tb, exec.Command("sh", "-c", "echo config is broken >&2; exit 3"))
		p.WaitReady(tb, "http://127.0.0.1:0/readyz", 30*time.Second) // never dialled: the process exits first
	})
	if !strings.Contains(msg, "exited (exit status 3)") || !strings.Contains(msg, "config is broken") {
		t.Errorf("failure message %q: want the exit status and the process's output", msg)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s: an exited process must not be waited on for the whole timeout", took)
	}
}

func TestWaitReady_ReturnsOnceReadyzAnswers200(t *testing.T) {
	var asked atomic.Bool // the first answer is 503, as while a service starts
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !asked.Swap(true) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	p := StartCmd(t, exec.Command("sleep", "60"))
	p.WaitReady(t, srv.URL+"/readyz", 10*time.Second)
	p.Kill()
	if exited, err := p.Exited(); !exited || err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("after Kill: exited %v, %v", exited, err)
	}
}

func TestBuffer_KeepsTheLastPartPastItsBound(t *testing.T) {
	b := &Buffer{Max: 100}
	for i := range 50 {
		fmt.Fprintf(b, "line %02d\n", i)
	}
	s := b.String()
	if len(s) > 200 || !strings.HasSuffix(s, "line 49\n") || strings.Contains(s, "line 00") {
		t.Errorf("bounded buffer holds %d bytes:\n%s", len(s), s)
	}
}

// The address comes from the process's own "listening" line, however its output is split into writes.
func TestWaitListening_ReturnsTheReportedAddress(t *testing.T) {
	script := `printf '{"level":"INFO","msg":"starting"}\n{"level":"INFO","msg":"liste'; sleep 0.1; ` +
		`printf 'ning","service":"forms","addr":"127.0.0.1:41234"}\n'; exec sleep 60`
	p := StartCmd(t, exec.Command("sh", "-c", script))
	if got := p.WaitListening(t, 10*time.Second); got != "127.0.0.1:41234" {
		t.Fatalf("got %q", got)
	}
	if got := p.WaitListening(t, time.Second); got != "127.0.0.1:41234" {
		t.Fatalf("second call: %q", got)
	}
}

func TestWaitListening_AProcessThatExitsFailsAtOnceWithItsOutput(t *testing.T) {
	msg := fatal(t, func(tb testing.TB) {
		StartCmd(tb, exec.Command("sh", "-c", `echo '{"msg":"listen: address already in use"}' >&2; exit 1`)).WaitListening(tb, time.Minute)
	})
	if !strings.Contains(msg, "exited") || !strings.Contains(msg, "address already in use") {
		t.Errorf("failure message %q", msg)
	}
}
