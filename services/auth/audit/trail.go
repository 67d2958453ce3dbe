package audit

import (
	"sync"
	"time"
)

// Where an event is kept (docs/security.md "A trail nobody can flush", D52). Anyone can send requests
// that end in an audit event, and a capped stream keeps only its newest entries: if those requests
// wrote to the stream that holds the security events, 100,000 of them would push every sign-in and
// every account change out of Redis. So:
//
//   - a refusal that names no user (a missing CSRF token, a malformed address, an unknown account, a
//     resource server without credentials) nor a machine client of ours acting for itself is counted
//     and logged, sampled, and not stored: it says nothing about anyone's account;
//   - what anyone can cause without a credential — a failure naming an account (a wrong password, a
//     lockout, a wrong code), and the successes of the doors open to all (a sign-up, a mailed link
//     asked for) — goes to the attempts stream, capped on its own;
//   - everything else — sign-ins, account and factor changes, operators' and machines' actions, and
//     the replays that reveal a stolen code or token — goes to the security stream, which
//     unauthenticated traffic cannot reach, hash-chained under a key Redis does not hold.

// Trail is where an event is kept.
type Trail int

const (
	// Unkept events are counted and logged (sampled), not stored.
	Unkept Trail = iota
	// Attempts is the stream of what anyone can cause without a credential (AttemptsKey).
	Attempts
	// Security is the chained stream of security events (StreamKey).
	Security
)

// byAnyone are the kinds whose successes need no credential.
var byAnyone = map[Kind]bool{SignUp: true, VerificationSent: true, ResetRequested: true}

// evidence are failures that are kept as security events whoever caused them: a code or a rotated
// refresh token presented again means one was stolen (RFC 9700 4.14), and presenting one takes a
// credential that was issued.
var evidence = map[Kind]bool{CodeReplay: true, RefreshReuse: true}

// TrailOf says where e is kept.
func TrailOf(e Event) Trail {
	switch {
	case evidence[e.Kind]:
		return Security
	case e.Outcome == Failure && e.User == "" && (e.Actor != ActorClient || e.Client == ""):
		return Unkept // names nobody: no user, and no machine client that is ours
	case e.Outcome == Failure || byAnyone[e.Kind]:
		return Attempts
	}
	return Security
}

// sampler lets through at most perSecond log lines of each kind in each second, so that a flood of
// refusals naming no user cannot flood the log either; the metric counts every one.
type sampler struct {
	perSecond int
	mu        sync.Mutex
	second    int64
	seen      map[Kind]int
}

func newSampler(perSecond int) *sampler { return &sampler{perSecond: perSecond, seen: map[Kind]int{}} }

// allow reports whether an event of kind at now is logged.
func (s *sampler) allow(kind Kind, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec := now.Unix(); sec != s.second {
		s.second = sec
		clear(s.seen)
	}
	s.seen[kind]++
	return s.seen[kind] <= s.perSecond
}
