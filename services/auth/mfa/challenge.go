package mfa

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The second step's challenge (docs/auth.md "Two-step sign-in"): between a right password and the code,
// the browser holds a random token (a cookie) whose SHA-256 names a short-lived record with the user and
// the authentication methods so far, and the user's sign-out generation then: a sign-out everywhere, a
// password change or a reset in between ends it (D51), so that a challenge begun with the old password
// cannot open a session of the new generation. Nothing of the authorization request is kept: it travels
// in the form's action URL.

func challengeKey(token string) string {
	h := sha256.Sum256([]byte(token))
	return "auth:mfa-challenge:{" + base64.RawURLEncoding.EncodeToString(h[:]) + "}"
}

// StartChallenge records the challenge token for user, signed in so far with first, at the user's
// sign-out generation gen (package store), for life.
func (s *Store) StartChallenge(ctx context.Context, token, user string, first []string, gen int64, life time.Duration) error {
	v := user + "|" + strings.Join(first, ",") + "|" + strconv.FormatInt(gen, 10)
	if err := s.rdb.Set(ctx, challengeKey(token), v, life).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// Challenge returns the user, the methods so far and the sign-out generation of the challenge token
// ("" when there is none, or it ended; generation -1 for a record without one, which no user has).
func (s *Store) Challenge(ctx context.Context, token string) (user string, first []string, gen int64, err error) {
	if token == "" || len(token) > 128 {
		return "", nil, 0, nil
	}
	v, err := s.rdb.Get(ctx, challengeKey(token)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil, 0, nil
	}
	if err != nil {
		return "", nil, 0, unavailable(err)
	}
	user, rest, _ := strings.Cut(v, "|")
	methods, genText, _ := strings.Cut(rest, "|")
	if methods != "" {
		first = strings.Split(methods, ",")
	}
	gen, perr := strconv.ParseInt(genText, 10, 64)
	if perr != nil {
		gen = -1
	}
	return user, first, gen, nil
}

// EndChallenge ends the challenge token (its code was accepted).
func (s *Store) EndChallenge(ctx context.Context, token string) error {
	if err := s.rdb.Del(ctx, challengeKey(token)).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}
