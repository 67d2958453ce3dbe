// Package throttle bounds failed sign-ins with budgets in Redis that every replica shares (budget.go:
// known browsers, unknown browsers of an account, client addresses; failures slow down, then stop), and
// second-factor codes per user with the same model (code.go), bounds sign-ups per client address and per e-mail address (signup.go), and rate-limits requests
// (rate.go).
package throttle

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// ErrUnavailable wraps Redis failures.
var ErrUnavailable = storeerr.Unavailable("throttle store unavailable")

// Limits are the budgets: failures allowed within Window per known browser (Device), per account for
// every unknown browser together (Account) and per client address (IP), and how failures slow down
// before a budget is used up (DelayAfter, MaxDelay). 0 disables a limit.
type Limits struct {
	Device  int
	Account int
	IP      int
	Window  time.Duration
	// DelayAfter failures of a browser or of an account's unknown browsers, each further attempt
	// waits: 1 s, doubling, at most MaxDelay. 0: no delays.
	DelayAfter int
	MaxDelay   time.Duration
}

// Limiter counts failures.
type Limiter struct {
	rdb redis.UniversalClient
	now func() time.Time
}

// New returns a Limiter whose budgets run on now (nil: time.Now); Redis's own clock only ends the
// keys of budgets long over.
func New(rdb redis.UniversalClient, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{rdb: rdb, now: now}
}

// The key holds a hash of the account or address: bounded length, and no e-mail address in key names.
func counterKey(kind, v string) string {
	h := sha256.Sum256([]byte(strings.ToLower(v)))
	return "auth:throttle:" + kind + ":{" + hex.EncodeToString(h[:16]) + "}"
}

// roundUp is d in whole seconds, rounded up (Retry-After counts seconds; a wait of 0.2 s is 1 s).
func roundUp(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + time.Second - 1).Truncate(time.Second)
}
