package passkey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/redis/go-redis/v9"
)

// Store keeps passkeys and ceremonies in Redis. The keys of one user share the hash tag {<user ID>}
// (the user record's too), so they sit in one Redis Cluster slot and one script can change them together:
//
//	auth:passkey:{<user>}          hash: credential ID → the passkey (JSON: name, created, public key, flags)
//	auth:passkey:{<user>}:use      hash: credential ID → "<sign count>|<last used>|<last clone refused>" (Unix s)
//	auth:passkey-ceremony:{<id>}   a ceremony's challenge and binding (JSON), for the ceremony's timeout
//
// A passkey lives as long as its account (the CLI's `users delete` removes them); a ceremony is read and
// deleted in one step (GETDEL), so it is used at most once.
type Store struct {
	rdb redis.UniversalClient
	now func() time.Time
}

// NewStore returns a Store. now is the clock of created and last-used times (default time.Now).
func NewStore(rdb redis.UniversalClient, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rdb: rdb, now: now}
}

func keysKey(userID string) string     { return "auth:passkey:{" + userID + "}" }
func useKey(userID string) string      { return "auth:passkey:{" + userID + "}:use" }
func ceremonyKey(id string) string     { return "auth:passkey-ceremony:{" + id + "}" }
func unavailable(err error) error      { return fmt.Errorf("%w: %v", ErrUnavailable, err) }
func encodeID(raw []byte) string       { return base64.RawURLEncoding.EncodeToString(raw) }
func validUserID(id string) bool       { return validHandle([]byte(id)) }
func validCredentialID(id string) bool { return len(id) > 0 && len(id) <= 1400 && isBase64URL(id) } // 1023 bytes, encoded

// unixOrZero and unixOf map the zero time to 0 and back.
func unixOrZero(secs int64) time.Time {
	if secs == 0 {
		return time.Time{}
	}
	return time.Unix(secs, 0).UTC()
}

func unixOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// record is a passkey as stored (the counter and times are in the use hash).
type record struct {
	Name    string              `json:"name"`
	Created int64               `json:"created"`
	Synced  bool                `json:"synced,omitempty"`
	Cred    webauthn.Credential `json:"cred"`
}

// List returns the user's passkeys, oldest first.
func (s *Store) List(ctx context.Context, userID string) ([]Passkey, error) {
	if !validUserID(userID) {
		return nil, nil
	}
	var recs, uses *redis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		recs = p.HGetAll(ctx, keysKey(userID))
		uses = p.HGetAll(ctx, useKey(userID))
		return nil
	})
	if err != nil {
		return nil, unavailable(err)
	}
	var out []Passkey
	for id, v := range recs.Val() {
		var r record
		if json.Unmarshal([]byte(v), &r) != nil {
			continue // not ours to read; never fails the whole list
		}
		p := Passkey{ID: id, Name: r.Name, Created: unixOrZero(r.Created), Synced: r.Synced, cred: r.Cred}
		p.SignCount, p.LastUsed, p.ClonedAt = parseUse(uses.Val()[id])
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Passkey) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func parseUse(v string) (count uint32, lastUsed, cloned time.Time) {
	f := strings.Split(v, "|")
	if len(f) != 3 {
		return 0, time.Time{}, time.Time{}
	}
	n, _ := strconv.ParseUint(f[0], 10, 32)
	u, _ := strconv.ParseInt(f[1], 10, 64)
	c, _ := strconv.ParseInt(f[2], 10, 64)
	return uint32(n), unixOrZero(u), unixOrZero(c)
}

// addScript stores a new passkey unless the user has it already or has MaxPerUser. KEYS: passkeys, use.
// ARGV: credential ID, record, limit, use value. Reply: 1 stored, -1 exists, -2 too many.
var addScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return -1 end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return -2 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
return 1
`)

// add stores a new passkey of the user.
func (s *Store) add(ctx context.Context, userID string, p *Passkey) error {
	if !validUserID(userID) || !validCredentialID(p.ID) {
		return ErrNotFound
	}
	c := p.cred
	c.Attestation = webauthn.CredentialAttestation{} // verified once at registration; not needed after
	rec, err := json.Marshal(record{Name: p.Name, Created: unixOf(p.Created), Synced: p.Synced, Cred: c})
	if err != nil {
		return err
	}
	use := fmt.Sprintf("%d|0|0", p.SignCount)
	n, err := addScript.Run(ctx, s.rdb, []string{keysKey(userID), useKey(userID)}, p.ID, rec, MaxPerUser, use).Int()
	switch {
	case err != nil:
		return unavailable(err)
	case n == -1:
		return refuse(ReasonExists, nil)
	case n == -2:
		return ErrTooMany
	}
	return nil
}

// removeScript deletes a passkey and returns its record ("" when there was none).
var removeScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return '' end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return v
`)

// Remove deletes one of the user's passkeys and returns it; ErrNotFound when the user has no such passkey.
func (s *Store) Remove(ctx context.Context, userID, id string) (*Passkey, error) {
	if !validUserID(userID) || !validCredentialID(id) {
		return nil, ErrNotFound
	}
	v, err := removeScript.Run(ctx, s.rdb, []string{keysKey(userID), useKey(userID)}, id).Text()
	if err != nil {
		return nil, unavailable(err)
	}
	if v == "" {
		return nil, ErrNotFound
	}
	var r record
	_ = json.Unmarshal([]byte(v), &r)
	return &Passkey{ID: id, Name: r.Name, Created: unixOrZero(r.Created), Synced: r.Synced}, nil
}

// replaceScript sets a passkey's record to ARGV[3] if it is still ARGV[2] (compare and set: the record
// is JSON, which Redis's Lua would re-encode lossily). Reply: 1 set, 0 changed meanwhile, -1 gone.
var replaceScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return -1 end
if v ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`)

// Rename gives one of the user's passkeys another name (checked with CheckName) and returns it;
// ErrNotFound when the user has no such passkey, ErrName for a name CheckName refuses.
func (s *Store) Rename(ctx context.Context, userID, id, name string) (*Passkey, error) {
	name, err := CheckName(name)
	if err != nil {
		return nil, err
	}
	if !validUserID(userID) || !validCredentialID(id) {
		return nil, ErrNotFound
	}
	for range 5 { // another rename of the same passkey at the same moment; the last one wins
		old, err := s.rdb.HGet(ctx, keysKey(userID), id).Result()
		if errors.Is(err, redis.Nil) {
			return nil, ErrNotFound
		}
		if err != nil {
			return nil, unavailable(err)
		}
		var r record
		if err := json.Unmarshal([]byte(old), &r); err != nil {
			return nil, ErrNotFound // not ours to read (as List skips it)
		}
		r.Name = name
		v, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		n, err := replaceScript.Run(ctx, s.rdb, []string{keysKey(userID)}, id, old, v).Int()
		switch {
		case err != nil:
			return nil, unavailable(err)
		case n == -1:
			return nil, ErrNotFound
		case n == 1:
			return &Passkey{ID: id, Name: r.Name, Created: unixOrZero(r.Created), Synced: r.Synced}, nil
		}
	}
	return nil, unavailable(errors.New("the passkey kept changing while it was renamed"))
}

// RemoveAll deletes every passkey of a user (the account is being deleted).
func (s *Store) RemoveAll(ctx context.Context, userID string) error {
	if !validUserID(userID) {
		return nil
	}
	if err := s.rdb.Del(ctx, keysKey(userID), useKey(userID)).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// usedScript records a sign-in with a passkey if its signature counter went up (or the authenticator
// keeps none: 0 stored and 0 received), in one step, so that two replicas checking two assertions of one
// counter value cannot both accept. KEYS: passkeys, use. ARGV: credential ID, counter, now.
// Reply: 1 recorded, 0 counter did not go up (the refusal's time is recorded), -1 no such passkey.
var usedScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return -1 end
local cur = redis.call('HGET', KEYS[2], ARGV[1]) or '0|0|0'
local stored, last, cloned = string.match(cur, '^(%d+)|(%d+)|(%d+)$')
stored = tonumber(stored or '0')
local n = tonumber(ARGV[2])
if (n ~= 0 or stored ~= 0) and n <= stored then
  redis.call('HSET', KEYS[2], ARGV[1], stored .. '|' .. (last or '0') .. '|' .. ARGV[3])
  return 0
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. '|' .. ARGV[3] .. '|' .. (cloned or '0'))
return 1
`)

// used records a sign-in: false when the counter did not go up (a cloned authenticator).
func (s *Store) used(ctx context.Context, userID, id string, count uint32) (bool, error) {
	n, err := usedScript.Run(ctx, s.rdb, []string{keysKey(userID), useKey(userID)}, id, count, s.now().Unix()).Int()
	switch {
	case err != nil:
		return false, unavailable(err)
	case n == -1:
		return false, refuse(ReasonUnknownPasskey, nil) // removed while the ceremony ran
	}
	return n == 1, nil
}

// Ceremony kinds.
const (
	kindRegister = "register"
	kindSignIn   = "signin"
)

// ceremony is what a ceremony's finish needs from its begin.
type ceremony struct {
	Kind string `json:"k"`
	// Binding is the SHA-256 of the kind and the browser's secret (its sign-in session for a
	// registration, its CSRF cookie for a sign-in): only the browser that began may finish.
	Binding string               `json:"b"`
	UserID  string               `json:"u,omitempty"`
	Name    string               `json:"n,omitempty"`
	Session webauthn.SessionData `json:"s"`
}

func binding(kind, secret string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + secret))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// putCeremony stores a ceremony for ttl under a new random ID, which it returns.
func (s *Store) putCeremony(ctx context.Context, c *ceremony, ttl time.Duration) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	id := base64.RawURLEncoding.EncodeToString(b)
	v, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	if err := s.rdb.Set(ctx, ceremonyKey(id), v, ttl).Err(); err != nil {
		return "", unavailable(err)
	}
	return id, nil
}

// takeCeremony reads and deletes a ceremony in one step, and checks that it is of kind and bound to
// secret. Every way of not finding it is the same refusal (expired).
func (s *Store) takeCeremony(ctx context.Context, id, kind, secret string) (*ceremony, error) {
	if len(id) != 43 || !isBase64URL(id) || secret == "" {
		return nil, refuse(ReasonExpired, nil)
	}
	v, err := s.rdb.GetDel(ctx, ceremonyKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, refuse(ReasonExpired, nil)
	}
	if err != nil {
		return nil, unavailable(err)
	}
	var c ceremony
	if json.Unmarshal(v, &c) != nil || c.Kind != kind ||
		subtle.ConstantTimeCompare([]byte(c.Binding), []byte(binding(kind, secret))) != 1 {
		return nil, refuse(ReasonExpired, errors.New("the ceremony is another kind's or another browser's"))
	}
	return &c, nil
}

func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
