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
)

// ErrUnavailable wraps Redis failures.
var ErrUnavailable = errors.New("session store unavailable")

// Session is a signed-in browser.
type Session struct {
	UserID   string
	AuthTime time.Time
}

// Store keeps sessions.
type Store struct{ rdb redis.UniversalClient }

// New returns a Store.
func New(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

func sessionKey(token string) string {
	h := sha256.Sum256([]byte(token))
	return "auth:sso:{" + base64.RawURLEncoding.EncodeToString(h[:]) + "}"
}

// Create starts a session and returns the cookie value.
func (s *Store) Create(ctx context.Context, userID string, authTime time.Time, ttl time.Duration) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	v := userID + "|" + strconv.FormatInt(authTime.Unix(), 10)
	if err := s.rdb.Set(ctx, sessionKey(token), v, ttl).Err(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return token, nil
}

// Get returns the session for a cookie value, or nil when there is none.
func (s *Store) Get(ctx context.Context, token string) (*Session, error) {
	if token == "" || len(token) > 128 {
		return nil, nil
	}
	v, err := s.rdb.Get(ctx, sessionKey(token)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	uid, at, ok := strings.Cut(v, "|")
	secs, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil {
		return nil, nil
	}
	return &Session{UserID: uid, AuthTime: time.Unix(secs, 0).UTC()}, nil
}

// Delete ends a session.
func (s *Store) Delete(ctx context.Context, token string) error {
	if token == "" || len(token) > 128 {
		return nil
	}
	if err := s.rdb.Del(ctx, sessionKey(token)).Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}
