package testwait

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the goroutine, as the real one does.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = strings.TrimSpace(format)
	for _, a := range args {
		if err, ok := a.(error); ok {
			r.failed += " " + err.Error()
		}
	}
	panic(r)
}

func run(f func(tb testing.TB)) (failed string) {
	r := &recorder{}
	defer func() {
		if p := recover(); p != nil && p != any(r) {
			panic(p)
		}
		failed = r.failed
	}()
	f(r)
	return ""
}

func TestFor_ReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	For(t, time.Minute, "the third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Fatalf("%d calls, want exactly 3: the wait must stop when the condition holds", calls)
	}
}

func TestUntil_FailsWithTheLastErrorAfterTheBound(t *testing.T) {
	calls := 0
	failed := run(func(tb testing.TB) {
		Until(tb, 30*time.Millisecond, "never", func() error { calls++; return errors.New("still 503") })
	})
	if !strings.Contains(failed, "still 503") {
		t.Fatalf("failure %q does not carry the condition's last error", failed)
	}
	if calls < 2 {
		t.Fatalf("%d calls: the condition was not polled again before giving up", calls)
	}
}

func TestPoll_AsksAtLeastOnceEvenWithNoTimeLeft(t *testing.T) {
	if err := Poll(0, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
}
