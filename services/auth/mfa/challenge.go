package mfa

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The second step's challenge (docs/auth.md "Two-step sign-in"): between a right password and the code,
// the browser holds a random token (a cookie) whose SHA-256 names a short-lived record with the user and
// the authentication methods so far. Nothing of the authorization request is kept: it travels in the
// form's action URL.

func challengeKey(token string) string {
	h := sha256.Sum256([]byte(token))
	return "auth:mfa-challenge:{" + base64.RawURLEncoding.EncodeToString(h[:]) + "}"
}

// StartChallenge records the challenge token for user, signed in so far with first, for life.
func (s *Store) StartChallenge(ctx context.Context, token, user string, first []string, life time.Duration) error {
	if err := s.rdb.Set(ctx, challengeKey(token), user+"|"+strings.Join(first, ","), life).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// Challenge returns the user and the methods so far of the challenge token ("" when there is none, or
// it ended).
func (s *Store) Challenge(ctx context.Context, token string) (user string, first []string, err error) {
	if token == "" || len(token) > 128 {
		return "", nil, nil
	}
	v, err := s.rdb.Get(ctx, challengeKey(token)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, unavailable(err)
	}
	user, methods, _ := strings.Cut(v, "|")
	if methods != "" {
		first = strings.Split(methods, ",")
	}
	return user, first, nil
}

// EndChallenge ends the challenge token (its code was accepted).
func (s *Store) EndChallenge(ctx context.Context, token string) error {
	if err := s.rdb.Del(ctx, challengeKey(token)).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}
