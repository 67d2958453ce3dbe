package users

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/formsservice/formsservice/services/platform/config"
)

// Params are argon2id parameters. The defaults are OWASP's minimum: 19 MiB, 2 passes, 1 lane.
type Params struct {
	MemoryKiB   uint32
	Iterations  uint32
	Parallelism uint8
}

// ParamsFrom takes the configured parameters (config.PasswordHash, defaulted to OWASP's minimum there).
func ParamsFrom(ph config.PasswordHash) Params {
	return Params{MemoryKiB: ph.MemoryKiB, Iterations: ph.Iterations, Parallelism: ph.Parallelism}
}

// DefaultParams is OWASP's minimum recommendation for argon2id.
var DefaultParams = Params{MemoryKiB: 19456, Iterations: 2, Parallelism: 1}

const (
	saltLen = 16
	keyLen  = 32
	// maxMemoryKiB bounds what a stored hash may ask for, so that a corrupt record cannot make one
	// verification allocate gigabytes.
	maxMemoryKiB = 4 << 20
)

// ErrBusy is returned when the hashing pool stays full until the caller's context ends.
var ErrBusy = errors.New("password hashing is busy")

// Hasher hashes and verifies passwords with argon2id on a bounded pool: at most Concurrency hashes run at
// once, so that a burst of sign-ins costs at most Concurrency × MemoryKiB, and the rest wait (bounded by
// their context) instead of exhausting memory.
type Hasher struct {
	params Params
	slots  chan struct{}
	dummy  string
	// MaxWait bounds the wait for a free slot even when the caller's context has no deadline (a
	// request's context may not): past it the caller gets ErrBusy, answered with "try again".
	MaxWait time.Duration
	checks  atomic.Uint64
}

// NewHasher returns a Hasher for new hashes with p; concurrency <= 0 means the number of usable CPUs.
func NewHasher(p Params, concurrency int) *Hasher {
	if p.MemoryKiB == 0 || p.Iterations == 0 || p.Parallelism == 0 {
		p = DefaultParams
	}
	if concurrency <= 0 {
		concurrency = runtime.GOMAXPROCS(0)
	}
	h := &Hasher{params: p, slots: make(chan struct{}, concurrency), MaxWait: 5 * time.Second}
	// A hash of nothing anyone knows, verified when the e-mail is unknown so that the answer takes as
	// long as for a known e-mail with a wrong password.
	h.dummy = h.encode(p, make([]byte, saltLen), argon2.IDKey([]byte("no such user"), make([]byte, saltLen), p.Iterations, p.MemoryKiB, p.Parallelism, keyLen))
	return h
}

// Params returns the parameters new hashes get.
func (h *Hasher) Params() Params { return h.params }

// Checks is how many password verifications have run (the sign-in throttle's proof: it must bound them).
func (h *Hasher) Checks() uint64 { return h.checks.Load() }

// InUse is how many hashes are running now (at most the pool's size).
func (h *Hasher) InUse() int { return len(h.slots) }

func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	default:
	}
	timer := time.NewTimer(h.MaxWait)
	defer timer.Stop()
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ErrBusy
	case <-timer.C:
		return ErrBusy
	}
}

func (h *Hasher) release() { <-h.slots }

// Hash returns a PHC string: $argon2id$v=19$m=...,t=...,p=...$salt$hash.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	p := h.params
	return h.encode(p, salt, argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, keyLen)), nil
}

func (h *Hasher) encode(p Params, salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Iterations, p.Parallelism,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// Verify reports whether password matches encoded, and whether encoded should be replaced by a hash
// with the current parameters. An empty encoded verifies against a dummy hash and reports false.
func (h *Hasher) Verify(ctx context.Context, encoded, password string) (ok, rehash bool, err error) {
	if encoded == "" {
		encoded = h.dummy
		defer func() { ok, rehash = false, false }()
	}
	p, salt, want, err := decode(encoded)
	if err != nil {
		return false, false, err
	}
	if err := h.acquire(ctx); err != nil {
		return false, false, err
	}
	h.checks.Add(1)
	got := argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, uint32(len(want)))
	h.release()
	return subtle.ConstantTimeCompare(got, want) == 1, p != h.params, nil
}

func decode(encoded string) (Params, []byte, []byte, error) {
	var p Params
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return p, nil, nil, errors.New("password hash: not argon2id")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, errors.New("password hash: unsupported version")
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Iterations, &p.Parallelism); err != nil {
		return p, nil, nil, errors.New("password hash: bad parameters")
	}
	if p.MemoryKiB == 0 || p.MemoryKiB > maxMemoryKiB || p.Iterations == 0 || p.Iterations > 64 || p.Parallelism == 0 {
		return p, nil, nil, errors.New("password hash: parameters out of range")
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return p, nil, nil, errors.New("password hash: bad salt")
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 64 {
		return p, nil, nil, errors.New("password hash: bad key")
	}
	return p, salt, key, nil
}
