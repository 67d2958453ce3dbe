// Package sso keeps sign-in sessions: the hosted page's cookie holds a random token, Redis holds its
// SHA-256 with the user ID and the time of sign-in, so that a second authorize on any replica skips the
// form, and a dump of Redis yields no usable cookie.
package sso

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// ErrUnavailable wraps Redis failures.
var ErrUnavailable = storeerr.Unavailable("session store unavailable")

// Session is a signed-in browser.
type Session struct {
	UserID   string
	AuthTime time.Time
	// AMR are the methods the person signed in with (package acr): the ID token's amr.
	AMR []string
	// ID names the session in Redis and on the account page (the cookie's SHA-256, not the cookie).
	ID string
	// Generation is the user's sign-out generation when the session started (package store): a sign-out
	// everywhere since then refuses the session's codes.
	Generation int64
}

// Store keeps sessions.
type Store struct {
	rdb  redis.UniversalClient
	idle func() time.Duration
}

// New returns a Store.
func New(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

// WithIdle sets the idle timeout, read at every use (the live configuration; 0: none): a session not
// used for that long ends, and each use starts it again, never past the session's absolute lifetime.
func (s *Store) WithIdle(idle func() time.Duration) *Store {
	s.idle = idle
	return s
}

func (s *Store) idleTimeout() time.Duration {
	if s.idle == nil {
		return 0
	}
	return max(s.idle(), 0)
}

// Bounds that do not depend on how a user behaves: sessions per user (beyond it the oldest ends) and
// families a session lists itself (grants issued before the user's grant index remembered their session).
const (
	MaxSessionsPerUser    = 64
	MaxFamiliesPerSession = 256
)

func sessionID(token string) string {
	h := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func keyOf(id string) string { return "auth:sso:{" + id + "}" }

// familiesKey lists the token families started in a session (same slot as the session).
func familiesKey(id string) string { return "auth:sso:{" + id + "}:families" }

// userKey is the user's sessions, a sorted set of session IDs scored by their end (Unix ms).
func userKey(userID string) string { return "auth:sso-user:{" + userID + "}" }

// Create starts a session and returns the cookie value.
func (s *Store) Create(ctx context.Context, userID string, authTime time.Time, ttl time.Duration) (string, error) {
	return s.Start(ctx, Start{UserID: userID, AuthTime: authTime}, ttl)
}

// Start starts a session and returns the cookie value (list.go describes Start).
func (s *Store) Start(ctx context.Context, st Start, ttl time.Duration) (string, error) {
	var q *Started
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // the start carries its own error
		q = s.QueueStart(ctx, p, st, ttl)
		return nil
	})
	return q.Token(ctx)
}

// Started is a session start queued in a caller's pipeline (QueueStart): a sign-in sends it with the
// settling of its throttle reservation and its rate limit, in one round trip (D44).
type Started struct {
	s     *Store
	token string
	user  string
	err   error
	cmds  []redis.Cmder
	size  *redis.IntCmd
}

// QueueStart queues Start's writes in p. After p is sent, Token answers as Start would.
func (s *Store) QueueStart(ctx context.Context, p redis.Pipeliner, st Start, ttl time.Duration) *Started {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return &Started{err: err}
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	userID := st.UserID
	v := userID + "|" + strconv.FormatInt(st.AuthTime.Unix(), 10) + "|" + strings.Join(st.AMR, ",") + "|" + strconv.FormatInt(st.Generation, 10)
	id := sessionID(token)
	now := time.Now()
	// The records live until the idle timeout (each use starts it again, see Get) and never past the
	// absolute lifetime, which the details keep ("ends", Unix ms).
	life := ttl
	if idle := s.idleTimeout(); idle > 0 && idle < life {
		life = idle
	}
	q := &Started{s: s, token: token, user: userID}
	uk := userKey(userID)
	q.cmds = append(q.cmds,
		p.Set(ctx, keyOf(id), v, life),
		p.HSet(ctx, metaKey(id), "ua", clip(st.UserAgent, MaxUserAgent), "last", now.Unix(), "ends", now.Add(ttl).UnixMilli()),
		p.PExpire(ctx, metaKey(id), life),
		p.ZAdd(ctx, uk, redis.Z{Score: float64(now.Add(ttl).UnixMilli()), Member: id}),
		p.ZRemRangeByScore(ctx, uk, "-inf", strconv.FormatInt(now.UnixMilli(), 10)))
	q.size = p.ZCard(ctx, uk)
	q.cmds = append(q.cmds, q.size, p.PExpire(ctx, uk, ttl))
	return q
}

// Token is the new session's cookie value, once the pipeline was sent; an error when it was not stored.
func (q *Started) Token(ctx context.Context) (string, error) {
	if q.err != nil {
		return "", q.err
	}
	for _, c := range q.cmds {
		if err := c.Err(); err != nil {
			return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	if n := q.size.Val(); n > MaxSessionsPerUser {
		// The oldest sessions end: the index stays bounded and no session escapes "sign out everywhere".
		if old, err := q.s.rdb.ZPopMin(ctx, userKey(q.user), n-MaxSessionsPerUser).Result(); err == nil {
			for _, z := range old {
				if oid, ok := z.Member.(string); ok {
					q.s.rdb.Del(ctx, keyOf(oid), familiesKey(oid), metaKey(oid))
				}
			}
		}
	}
	return q.token, nil
}

// Families lists the token families a session lists itself: grants issued before the user's grant
// index remembered each grant's session (package store, EndSession), which logout reads as well.
func (s *Store) Families(ctx context.Context, token string) ([]string, error) {
	if token == "" || len(token) > 128 {
		return nil, nil
	}
	fams, err := s.rdb.SMembers(ctx, familiesKey(sessionID(token))).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return fams, nil
}

var endScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
local fams = redis.call('SMEMBERS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return {v or '', fams}
`)

// End ends a session and returns its user ("" when there was no such session) and the token families
// started in it.
func (s *Store) End(ctx context.Context, token string) (userID string, families []string, err error) {
	if token == "" || len(token) > 128 {
		return "", nil, nil
	}
	id := sessionID(token)
	res, err := endScript.Run(ctx, s.rdb, []string{keyOf(id), familiesKey(id), metaKey(id)}).Slice()
	if err != nil || len(res) != 2 {
		return "", nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	v, _ := res[0].(string)
	if uid, _, ok := strings.Cut(v, "|"); ok {
		userID = uid
		_ = s.rdb.ZRem(ctx, userKey(uid), id).Err()
	}
	if list, ok := res[1].([]any); ok {
		for _, f := range list {
			if fs, ok := f.(string); ok {
				families = append(families, fs)
			}
		}
	}
	return userID, families, nil
}

// EndUser ends every session of a user ("sign out everywhere") and returns how many there were.
func (s *Store) EndUser(ctx context.Context, userID string) (int, error) {
	ids, err := s.rdb.ZRange(ctx, userKey(userID), 0, -1).Result()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.Del(ctx, keyOf(id), familiesKey(id), metaKey(id))
		}
		p.Del(ctx, userKey(userID))
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return len(ids), nil
}

// getScript reads a session, records its use in its details ("last", Unix s) and, with an idle timeout (ARGV[1] ms, 0: none), starts it again: its
// records live the idle timeout from now (ARGV[2], Unix ms), never past the absolute end the details
// keep, nor, for a session stored without one, past the end it has. KEYS: the session, its details, its
// families.
var getScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return false end
local idle, now = tonumber(ARGV[1]), tonumber(ARGV[2])
if idle > 0 then
  local left = tonumber(redis.call('HGET', KEYS[2], 'ends') or '')
  if left then left = left - now else left = redis.call('PTTL', KEYS[1]) end
  local life = math.min(idle, left)
  if life <= 0 then
    redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
    return false
  end
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], life) end
end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HSET', KEYS[2], 'last', math.floor(now / 1000)) end
return v
`)

// Get returns the session for a cookie value, or nil when there is none, and records the use (the
// account page shows it). With an idle timeout, the use starts it again.
func (s *Store) Get(ctx context.Context, token string) (*Session, error) {
	if token == "" || len(token) > 128 {
		return nil, nil
	}
	id := sessionID(token)
	v, err := getScript.Run(ctx, s.rdb, []string{keyOf(id), metaKey(id), familiesKey(id)}, s.idleTimeout().Milliseconds(), time.Now().UnixMilli()).Text()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	sess := parse(v)
	if sess != nil {
		sess.ID = sessionID(token)
	}
	return sess, nil
}

// Delete ends a session.
func (s *Store) Delete(ctx context.Context, token string) error {
	_, _, err := s.End(ctx, token)
	return err
}
