// Package link issues and redeems the links the provider mails (e-mail verification, password reset):
// signed, expiring and single-use.
//
// A token is "v1.<purpose>.<id>.<expires>.<mac>": purpose names the journey (a verification link is
// no reset link), id 16 random bytes, expires a Unix time, and mac an HMAC-SHA256 of the rest under a
// key derived from the signing key (keys.Set.Secrets; the previous and next keys' still verify around a
// rotation), all base64url. The MAC refuses a tampered or made-up link before Redis is asked; the
// expiry is signed, so that it holds whatever Redis keeps. Single use is Redis's: the link's record,
// under the SHA-256 of its id (Redis never holds a usable link), is taken with GETDEL, so of any number
// of parallel uses on any number of replicas exactly one gets it.
package link

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// Purpose is the HKDF info string the keys are derived with.
const Purpose = "formsservice auth mail-link v1"

// The ways a link is refused. Each has its own answer on the page: an invalid link cannot be fixed, an
// expired or used one can be asked for again.
var (
	ErrInvalid     = errors.New("link: not a valid link")
	ErrExpired     = errors.New("link: expired")
	ErrUsed        = errors.New("link: already used")
	ErrUnavailable = storeerr.Unavailable("link: store unavailable")
)

// MaxLen bounds a token: anything longer is refused unread.
const MaxLen = 200

// Keys sign and check links: Current signs, every one of them verifies.
type Keys struct {
	Current []byte
	Others  [][]byte
}

// Link is what a redeemed (or peeked) link carries.
type Link struct {
	Purpose string
	// User is the account's ID.
	User string
	// Client is the OAuth client the link was asked for from ("" for none): the page after it links back.
	Client string
	// Bind is the caller's fact that must still hold when the link is used (a reset link: a digest of the
	// password hash at issue, so that a password changed since voids it).
	Bind    string
	Expires time.Time
}

type record struct {
	User   string `json:"u"`
	Client string `json:"c,omitempty"`
	Bind   string `json:"b,omitempty"`
}

// Store issues and redeems links.
type Store struct {
	rdb  redis.UniversalClient
	keys Keys
	now  func() time.Time
}

// New returns a Store; now is the clock of expiries (nil: time.Now).
func New(rdb redis.UniversalClient, k Keys, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rdb: rdb, keys: k, now: now}
}

const version = "v1"

// b64 is strict: a MAC has one spelling.
var b64 = base64.RawURLEncoding.Strict()

func mac(key []byte, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

// recordKey is where a link's record lives: the SHA-256 of its id, never the id.
func recordKey(id []byte) string {
	h := sha256.Sum256(id)
	return "auth:link:{" + hex.EncodeToString(h[:]) + "}"
}

// Issue returns a new link token for l (its Expires is ignored: the link lasts ttl from now).
func (s *Store) Issue(ctx context.Context, l Link, ttl time.Duration) (string, error) {
	if !validPurpose(l.Purpose) || l.User == "" || ttl <= 0 {
		return "", fmt.Errorf("link: bad request (purpose %q)", l.Purpose)
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	exp := s.now().Add(ttl).Truncate(time.Second).Add(time.Second) // never shorter than ttl
	body := version + "." + l.Purpose + "." + b64.EncodeToString(id) + "." + strconv.FormatInt(exp.Unix(), 10)
	rec, _ := json.Marshal(record{User: l.User, Client: l.Client, Bind: l.Bind})
	if err := s.rdb.Set(ctx, recordKey(id), rec, ttl+time.Second).Err(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return body + "." + b64.EncodeToString(mac(s.keys.Current, body)), nil
}

// parse checks the token's form, MAC, purpose and expiry; it returns the id and the expiry.
func (s *Store) parse(token, purpose string) ([]byte, time.Time, error) {
	if len(token) > MaxLen {
		return nil, time.Time{}, ErrInvalid
	}
	parts := strings.Split(token, ".")
	if len(parts) != 5 || parts[0] != version {
		return nil, time.Time{}, ErrInvalid
	}
	// Compared in their encoding, not decoded: even a strict decoder skips CR and LF, and a link has one
	// spelling (the device cookies' FuzzCheck found the same in services/auth/device).
	got := []byte(parts[4])
	body := strings.Join(parts[:4], ".")
	signed := false
	for _, key := range append([][]byte{s.keys.Current}, s.keys.Others...) {
		if hmac.Equal(got, []byte(b64.EncodeToString(mac(key, body)))) {
			signed = true
			break
		}
	}
	if !signed || parts[1] != purpose {
		return nil, time.Time{}, ErrInvalid
	}
	id, err := b64.DecodeString(parts[2])
	if err != nil || len(id) != 16 || b64.EncodeToString(id) != parts[2] {
		return nil, time.Time{}, ErrInvalid
	}
	unix, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return nil, time.Time{}, ErrInvalid
	}
	exp := time.Unix(unix, 0)
	if !s.now().Before(exp) {
		return nil, exp, ErrExpired
	}
	return id, exp, nil
}

// Peek checks a link without using it up (a page that asks for more before the link acts: the new
// password of a reset).
func (s *Store) Peek(ctx context.Context, token, purpose string) (*Link, error) {
	return s.read(ctx, token, purpose, false)
}

// Use redeems a link: the first use gets it, every later one ErrUsed.
func (s *Store) Use(ctx context.Context, token, purpose string) (*Link, error) {
	return s.read(ctx, token, purpose, true)
}

func (s *Store) read(ctx context.Context, token, purpose string, take bool) (*Link, error) {
	id, exp, err := s.parse(token, purpose)
	if err != nil {
		return nil, err
	}
	var raw string
	if take {
		raw, err = s.rdb.GetDel(ctx, recordKey(id)).Result()
	} else {
		raw, err = s.rdb.Get(ctx, recordKey(id)).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, ErrUsed
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var rec record
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec.User == "" {
		return nil, ErrInvalid
	}
	return &Link{Purpose: purpose, User: rec.User, Client: rec.Client, Bind: rec.Bind, Expires: exp}, nil
}

func validPurpose(p string) bool {
	if p == "" || len(p) > 16 {
		return false
	}
	for _, c := range p {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
