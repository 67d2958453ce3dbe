package mfa

import (
	"context"
	"encoding/base32"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// ErrUnavailable wraps Redis failures.
var ErrUnavailable = storeerr.Unavailable("second-factor store unavailable")

// ErrNotEnrolled is an action that needs a second factor on a user without one.
var ErrNotEnrolled = errors.New("mfa: no second factor set up")

// ErrEnrolled is a set-up confirmed for a user who has a second factor: it is replaced only after it was
// turned off, which takes it (or a recovery code) and the password.
var ErrEnrolled = errors.New("mfa: a second factor is set up already")

// Store keeps each user's second factor in Redis. Every key of a user shares the hash tag {user}, so
// each change is one script on one Cluster slot:
//
//	auth:mfa:{user}           hash: totp (the stored secret), step (the last time step accepted), since
//	auth:mfa:{user}:pending   the secret being enrolled, until it is confirmed or its lifetime ends
//	auth:mfa:{user}:recovery  set of the unused recovery codes' hashes
//	auth:mfa:{user}:failures  wrong codes within the throttle's window (throttle.go)
type Store struct {
	rdb    redis.UniversalClient
	sealer Sealer
	now    func() time.Time
}

// NewStore returns a Store. now is the clock codes are checked against (time.Now when nil).
func NewStore(rdb redis.UniversalClient, sealer Sealer, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rdb: rdb, sealer: sealer, now: now}
}

func factorKey(user string) string   { return "auth:mfa:{" + user + "}" }
func pendingKey(user string) string  { return "auth:mfa:{" + user + "}:pending" }
func recoveryKey(user string) string { return "auth:mfa:{" + user + "}:recovery" }

func unavailable(err error) error { return fmt.Errorf("%w: %v", ErrUnavailable, err) }

// Status is a user's second factor as the account page shows it.
type Status struct {
	// TOTP is true once an authenticator app is confirmed.
	TOTP bool
	// Since is when it was confirmed.
	Since time.Time
	// RecoveryLeft is how many unused recovery codes remain.
	RecoveryLeft int
}

// Status reads a user's second factor in one round trip.
func (s *Store) Status(ctx context.Context, user string) (Status, error) {
	var since *redis.StringCmd
	var left *redis.IntCmd
	var has *redis.BoolCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		has = p.HExists(ctx, factorKey(user), "totp")
		since = p.HGet(ctx, factorKey(user), "since")
		left = p.SCard(ctx, recoveryKey(user))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Status{}, unavailable(err)
	}
	st := Status{TOTP: has.Val(), RecoveryLeft: int(left.Val())}
	if n, err := strconv.ParseInt(since.Val(), 10, 64); err == nil {
		st.Since = time.Unix(n, 0).UTC()
	}
	return st, nil
}

// Enrolled reports whether the user has a confirmed second factor (one round trip).
func (s *Store) Enrolled(ctx context.Context, user string) (bool, error) {
	ok, err := s.rdb.HExists(ctx, factorKey(user), "totp").Result()
	if err != nil {
		return false, unavailable(err)
	}
	return ok, nil
}

// QueueEnrolled queues Enrolled's read in the caller's pipeline p; after p is sent, the function it
// returns answers as Enrolled would (a sign-in reads it with the account, D44).
func (s *Store) QueueEnrolled(ctx context.Context, p redis.Pipeliner, user string) func() (bool, error) {
	cmd := p.HExists(ctx, factorKey(user), "totp")
	return func() (bool, error) {
		ok, err := cmd.Result()
		if err != nil {
			return false, unavailable(err)
		}
		return ok, nil
	}
}

// Pending returns the secret being enrolled for user, drawing a new one when there is none, so that a
// reload of the enrolment page shows the code already scanned. It lives ttl from when it was drawn.
// issuer and account label it in the app.
func (s *Store) Pending(ctx context.Context, user, issuer, account string, ttl time.Duration) (Key, error) {
	stored, err := s.rdb.Get(ctx, pendingKey(user)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return Key{}, unavailable(err)
	}
	if err == nil {
		if secret, oerr := s.sealer.open(user, stored); oerr == nil {
			return keyFor(issuer, account, secret)
		}
	}
	k, err := NewKey(issuer, account)
	if err != nil {
		return Key{}, err
	}
	if err := s.rdb.Set(ctx, pendingKey(user), s.sealer.seal(user, k.Secret), ttl).Err(); err != nil {
		return Key{}, unavailable(err)
	}
	return k, nil
}

// keyFor rebuilds the otpauth:// URI of a secret.
func keyFor(issuer, account, secret string) (Key, error) {
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(secret))
	if err != nil {
		return Key{}, fmt.Errorf("mfa: stored secret: %w", err)
	}
	k, err := totp.Generate(totp.GenerateOpts{Issuer: issuer, AccountName: account, Period: Period, Secret: raw,
		Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return Key{}, err
	}
	return Key{Secret: k.Secret(), URI: k.URL()}, nil
}

// confirmScript makes the pending secret the user's factor, with new recovery codes, if the pending
// secret is still the one the code was checked against and the user has no factor (a factor is replaced
// only by turning it off first, which takes it: D51). KEYS: factor, pending, recovery. ARGV: the
// stored pending value, the step accepted, the time (Unix s), then the recovery codes' hashes.
var confirmScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('HSET', KEYS[1], 'totp', ARGV[1], 'step', ARGV[2], 'since', ARGV[3])
redis.call('SADD', KEYS[3], unpack(ARGV, 4))
return 1
`)

// Confirm checks a code of the pending secret; when it is right, the secret becomes the user's second
// factor and Confirm returns ten new recovery codes, to be shown once. A pending secret that expired or
// was replaced meanwhile is ErrNotEnrolled; a user who has a factor already is ErrEnrolled.
func (s *Store) Confirm(ctx context.Context, user, code string) ([]string, Result, error) {
	code, err := NormalizeCode(code)
	if err != nil {
		return nil, Wrong, nil
	}
	stored, err := s.rdb.Get(ctx, pendingKey(user)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, Wrong, ErrNotEnrolled
	}
	if err != nil {
		return nil, Wrong, unavailable(err)
	}
	secret, err := s.sealer.open(user, stored)
	if err != nil {
		return nil, Wrong, err
	}
	step, res := Match(secret, code, s.now(), -1)
	if res != Accepted {
		return nil, res, nil
	}
	codes := NewRecoveryCodes()
	args := []any{stored, step, s.now().Unix()}
	for _, c := range codes {
		args = append(args, hashRecoveryCode(user, NormalizeRecoveryCode(c)))
	}
	n, err := confirmScript.Run(ctx, s.rdb, []string{factorKey(user), pendingKey(user), recoveryKey(user)}, args...).Int()
	if err != nil {
		return nil, Wrong, unavailable(err)
	}
	switch n {
	case 0:
		return nil, Wrong, ErrNotEnrolled
	case -1:
		return nil, Wrong, ErrEnrolled
	}
	return codes, Accepted, nil
}

// Check checks what a person typed at a step that asks for the second factor: a recovery code (by its
// shape) is spent, anything else is a TOTP code accepted once (Verify). recovery says which it was.
func (s *Store) Check(ctx context.Context, user, code string) (res Result, recovery bool, err error) {
	code = strings.TrimSpace(code)
	if !LooksLikeRecoveryCode(code) {
		res, err = s.Verify(ctx, user, code)
		return res, false, err
	}
	ok, err := s.UseRecoveryCode(ctx, user, code)
	if ok {
		return Accepted, true, err
	}
	return Wrong, true, err
}

// acceptScript records that a step was accepted, unless it (or a later one) was before or the factor
// changed meanwhile; with a third argument it stores that in place of the secret (the same secret,
// sealed: a secret stored in the clear before a key was configured is sealed at its next good code).
// KEYS: factor. ARGV: the stored secret the code was checked against, the step, [the sealed secret].
// Reply: 1 accepted, 0 replayed, -1 the factor is gone or replaced.
var acceptScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'totp') ~= ARGV[1] then return -1 end
local last = tonumber(redis.call('HGET', KEYS[1], 'step') or '-1')
if tonumber(ARGV[2]) <= last then return 0 end
redis.call('HSET', KEYS[1], 'step', ARGV[2])
if ARGV[3] then redis.call('HSET', KEYS[1], 'totp', ARGV[3]) end
return 1
`)

// Verify checks a TOTP code at sign-in: Accepted at most once per code (the step is recorded in the same
// script that checks it was not accepted before, so two requests racing with one code get one
// Accepted), Replayed for a code accepted before, Wrong otherwise. ErrNotEnrolled when the user has no
// second factor.
func (s *Store) Verify(ctx context.Context, user, code string) (Result, error) {
	code, err := NormalizeCode(code)
	if err != nil {
		return Wrong, nil
	}
	m, err := s.rdb.HMGet(ctx, factorKey(user), "totp", "step").Result()
	if err != nil {
		return Wrong, unavailable(err)
	}
	stored, _ := m[0].(string)
	if stored == "" {
		return Wrong, ErrNotEnrolled
	}
	last := int64(-1)
	if v, ok := m[1].(string); ok {
		last, _ = strconv.ParseInt(v, 10, 64)
	}
	secret, err := s.sealer.open(user, stored)
	if err != nil {
		return Wrong, err
	}
	step, res := Match(secret, code, s.now(), last)
	if res != Accepted {
		return res, nil
	}
	args := []any{stored, step}
	if s.sealer.aead != nil && strings.HasPrefix(stored, "p.") {
		args = append(args, s.sealer.seal(user, secret))
	}
	n, err := acceptScript.Run(ctx, s.rdb, []string{factorKey(user)}, args...).Int()
	switch {
	case err != nil:
		return Wrong, unavailable(err)
	case n == 1:
		return Accepted, nil
	case n == 0:
		return Replayed, nil
	}
	return Wrong, ErrNotEnrolled
}

// UseRecoveryCode spends a recovery code: true the first time a right code is given, false for a wrong
// or spent one (SREM removes it in the same step that checks it).
func (s *Store) UseRecoveryCode(ctx context.Context, user, code string) (bool, error) {
	norm := NormalizeRecoveryCode(code)
	if norm == "" {
		return false, nil
	}
	n, err := s.rdb.SRem(ctx, recoveryKey(user), hashRecoveryCode(user, norm)).Result()
	if err != nil {
		return false, unavailable(err)
	}
	return n == 1, nil
}

var replaceCodesScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'totp') == 0 then return 0 end
redis.call('DEL', KEYS[2])
redis.call('SADD', KEYS[2], unpack(ARGV))
return 1
`)

// NewRecoveryCodes replaces a user's recovery codes with ten new ones (the old ones stop working) and
// returns them, to be shown once.
func (s *Store) NewRecoveryCodes(ctx context.Context, user string) ([]string, error) {
	codes := NewRecoveryCodes()
	args := make([]any, len(codes))
	for i, c := range codes {
		args[i] = hashRecoveryCode(user, NormalizeRecoveryCode(c))
	}
	n, err := replaceCodesScript.Run(ctx, s.rdb, []string{factorKey(user), recoveryKey(user)}, args...).Int()
	if err != nil {
		return nil, unavailable(err)
	}
	if n == 0 {
		return nil, ErrNotEnrolled
	}
	return codes, nil
}

// Remove deletes the user's second factor, its recovery codes and any enrolment in progress.
func (s *Store) Remove(ctx context.Context, user string) error {
	if err := s.rdb.Del(ctx, factorKey(user), pendingKey(user), recoveryKey(user)).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// Forget deletes everything the store keeps of a user (a deleted account).
func (s *Store) Forget(ctx context.Context, user string) error {
	if err := s.rdb.Del(ctx, factorKey(user), pendingKey(user), recoveryKey(user)).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}
