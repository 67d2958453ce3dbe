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

	"github.com/formsservice/formsservice/internal/argon2"
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
// their context) instead of exhausting memory. Each slot of the pool owns the memory of one hash and
// keeps it: a sign-in allocates no 19 MiB for the collector to find (docs/auth.md, "Memory").
type Hasher struct {
	params Params
	slots  chan *argon2.Buffer // the free slots, each with its hash memory
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
	h := &Hasher{params: p, slots: make(chan *argon2.Buffer, concurrency), MaxWait: 5 * time.Second}
	for range concurrency {
		h.slots <- new(argon2.Buffer) // grown on its first hash
	}
	// A hash of nothing anyone knows, verified when the e-mail is unknown so that the answer takes as
	// long as for a known e-mail with a wrong password.
	buf := <-h.slots
	h.dummy = h.encode(p, make([]byte, saltLen), h.hash(buf, "no such user", make([]byte, saltLen), p, keyLen))
	h.release(buf)
	return h
}

// Params returns the parameters new hashes get.
func (h *Hasher) Params() Params { return h.params }

// Checks is how many password verifications have run (the sign-in throttle's proof: it must bound them).
func (h *Hasher) Checks() uint64 { return h.checks.Load() }

// PoolBytes is the memory the pool's slots hold once each has hashed: Concurrency × MemoryKiB.
func (h *Hasher) PoolBytes() int64 { return int64(cap(h.slots)) * int64(h.params.MemoryKiB) << 10 }

// InUse is how many hashes are running now (at most the pool's size).
func (h *Hasher) InUse() int { return cap(h.slots) - len(h.slots) }

// acquire takes a free slot and its memory, waiting (bounded) when every slot is busy.
func (h *Hasher) acquire(ctx context.Context) (*argon2.Buffer, error) {
	select {
	case buf := <-h.slots:
		return buf, nil
	default:
	}
	timer := time.NewTimer(h.MaxWait)
	defer timer.Stop()
	select {
	case buf := <-h.slots:
		return buf, nil
	case <-ctx.Done():
		return nil, ErrBusy
	case <-timer.C:
		return nil, ErrBusy
	}
}

func (h *Hasher) release(buf *argon2.Buffer) { h.slots <- buf }

// hash runs argon2id in buf. A stored hash with a higher memory cost than the configured one (before a
// change of the parameters) is verified in memory of its own, so that the slots keep only the
// configured cost and the pool's memory stays Concurrency × MemoryKiB.
func (h *Hasher) hash(buf *argon2.Buffer, password string, salt []byte, p Params, keyLen uint32) []byte {
	if p.MemoryKiB > h.params.MemoryKiB {
		return argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, keyLen)
	}
	return argon2.IDKeyInto(buf, []byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, keyLen)
}

// Hash returns a PHC string: $argon2id$v=19$m=...,t=...,p=...$salt$hash.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	buf, err := h.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer h.release(buf)
	return h.encode(h.params, salt, h.hash(buf, password, salt, h.params, keyLen)), nil
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
	buf, err := h.acquire(ctx)
	if err != nil {
		return false, false, err
	}
	h.checks.Add(1)
	got := h.hash(buf, password, salt, p, uint32(len(want)))
	h.release(buf)
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
