// Package testwait is the tests' one way to wait for a condition: poll it until it holds, and fail the
// test, saying what was awaited and the last thing seen, when it does not within a bound. It stands in
// for every fixed sleep: a test waits exactly as long as the condition takes, and a slow machine only
// makes it slower, never wrong.
//
// testify's Eventually runs the condition on another goroutine, so a condition that fails the test
// (t.Fatal through a helper, as most of ours can) would not stop it; this loop runs on the caller's.
package testwait

import (
	"errors"
	"testing"
	"time"
)

// The poll interval starts short (most conditions hold within milliseconds) and doubles up to maxPoll,
// so that a long wait does not hammer the process it asks.
const (
	firstPoll = 5 * time.Millisecond
	maxPoll   = 50 * time.Millisecond
)

var errNotYet = errors.New("not yet")

// For polls cond until it returns true, and fails t when it has not within the bound.
func For(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	Until(t, within, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// Until polls cond until it returns nil, and fails t with cond's last error when it has not within the
// bound.
func Until(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	if err := Poll(within, cond); err != nil {
		t.Fatalf("%s: not within %s: %v", what, within, err)
	}
}

// Poll is Until for code that has no testing.TB (test fixtures that return errors): it returns nil once
// cond does, or cond's last error when the bound has passed.
func Poll(within time.Duration, cond func() error) error {
	deadline := time.Now().Add(within)
	interval := firstPoll
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(interval) // the poll interval: the only sleep of a wait
		interval = min(2*interval, maxPoll)
	}
}
