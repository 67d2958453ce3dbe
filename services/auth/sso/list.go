package sso

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// This file is what the account page needs of sessions: how each was signed in (amr), which browser
// (user agent) and when it was last used, the list of a user's sessions, and ending one of them.

// Start is a new session.
type Start struct {
	UserID   string
	AuthTime time.Time
	// AMR are the methods the person signed in with (package acr).
	AMR []string
	// UserAgent is the browser's, shown on the account page (cut at MaxUserAgent bytes).
	UserAgent string
	// Generation is the user's sign-out generation the sign-in saw (Session.Generation).
	Generation int64
}

// MaxUserAgent bounds the user agent kept per session.
const MaxUserAgent = 256

// metaKey holds what the account page shows of a session (same slot as the session): ua, last (Unix s).
func metaKey(id string) string { return "auth:sso-meta:{" + id + "}" }

// ID is the session ID of a cookie value (its SHA-256): what the account page names sessions by.
func ID(token string) string { return sessionID(token) }

// parse reads a stored session: "user|authTime", "user|authTime|amr,amr" or
// "user|authTime|amr,amr|generation".
func parse(v string) *Session {
	uid, rest, ok := strings.Cut(v, "|")
	at, rest, _ := strings.Cut(rest, "|")
	amr, gen, _ := strings.Cut(rest, "|")
	secs, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil {
		return nil
	}
	s := &Session{UserID: uid, AuthTime: time.Unix(secs, 0).UTC()}
	if gen != "" {
		if s.Generation, err = strconv.ParseInt(gen, 10, 64); err != nil {
			return nil
		}
	}
	if amr != "" {
		s.AMR = strings.Split(amr, ",")
	}
	return s
}

// clip bounds a user-supplied string for storage: valid UTF-8 without control characters, at most n
// bytes.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// Info is one session as the account page lists it.
type Info struct {
	Session
	UserAgent string
	LastUsed  time.Time
	Ends      time.Time
}

// List returns the user's live sessions, the most recently used first: two round trips (the index,
// then every session's record and details pipelined).
func (s *Store) List(ctx context.Context, userID string) ([]Info, error) {
	zs, err := s.rdb.ZRangeByScoreWithScores(ctx, userKey(userID), &redis.ZRangeBy{Min: strconv.FormatInt(time.Now().UnixMilli(), 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	type row struct {
		id   string
		ends time.Time
		v    *redis.StringCmd
		meta *redis.MapStringStringCmd
	}
	rows := make([]*row, 0, len(zs))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, z := range zs {
			id, _ := z.Member.(string)
			r := &row{id: id, ends: time.UnixMilli(int64(z.Score)).UTC(), v: p.Get(ctx, keyOf(id)), meta: p.HGetAll(ctx, metaKey(id))}
			rows = append(rows, r)
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var out []Info
	for _, r := range rows {
		sess := parse(r.v.Val())
		if sess == nil || sess.UserID != userID {
			continue // ended meanwhile
		}
		sess.ID = r.id
		m := r.meta.Val()
		info := Info{Session: *sess, UserAgent: m["ua"], Ends: r.ends, LastUsed: sess.AuthTime}
		if n, err := strconv.ParseInt(m["last"], 10, 64); err == nil {
			info.LastUsed = time.Unix(n, 0).UTC()
		}
		out = append(out, info)
	}
	slices.SortStableFunc(out, func(a, b Info) int { return b.LastUsed.Compare(a.LastUsed) })
	return out, nil
}

// validID accepts what sessionID produces: 43 base64url characters.
func validID(id string) bool {
	if len(id) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(id)
	return err == nil
}

// EndID ends the user's session id (one the user's account page listed) and returns the token families
// started in it, for the caller to revoke first or after. ok is false when the user has no such session
// (another user's ID, or one that ended already): nothing is ended then.
func (s *Store) EndID(ctx context.Context, userID, id string) (families []string, ok bool, err error) {
	if !validID(id) {
		return nil, false, nil
	}
	if _, err := s.rdb.ZScore(ctx, userKey(userID), id).Result(); err == redis.Nil {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	res, err := endScript.Run(ctx, s.rdb, []string{keyOf(id), familiesKey(id), metaKey(id)}).Slice()
	if err != nil || len(res) != 2 {
		return nil, false, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	_ = s.rdb.ZRem(ctx, userKey(userID), id).Err()
	if v, _ := res[0].(string); v == "" {
		return nil, false, nil
	}
	if list, ok := res[1].([]any); ok {
		for _, f := range list {
			if fs, ok := f.(string); ok {
				families = append(families, fs)
			}
		}
	}
	return families, true, nil
}

var adoptScript = redis.NewScript(`
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
redis.call('SADD', KEYS[2], unpack(ARGV))
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
`)

// Adopt records families as started in the session token (a session that replaced an earlier one of the
// same user, at a second sign-in step: logging out of it must revoke the grants the earlier one started).
// At most MaxFamiliesPerSession are kept.
func (s *Store) Adopt(ctx context.Context, token string, families []string) error {
	if len(families) == 0 || token == "" || len(token) > 128 {
		return nil
	}
	if len(families) > MaxFamiliesPerSession {
		families = families[:MaxFamiliesPerSession]
	}
	id := sessionID(token)
	args := make([]any, len(families))
	for i, f := range families {
		args[i] = f
	}
	if err := adoptScript.Run(ctx, s.rdb, []string{keyOf(id), familiesKey(id)}, args...).Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}
