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

// Pending is what a challenge holds: the user, the authentication methods so far, the user's sign-out
// generation (package store) when it began, and whether the sign-in came from a browser never seen for
// the account (its owner is mailed once the code is accepted, D66).
type Pending struct {
	User       string
	First      []string
	Generation int64
	NewBrowser bool
	// Carry is what the sign-in carries over the second step to the grant it makes, opaque here (a
	// connector's sealed re-check state, D78); no '|'.
	Carry string
}

// StartChallenge records the challenge token for c, for life.
func (s *Store) StartChallenge(ctx context.Context, token string, c Pending, life time.Duration) error {
	v := c.User + "|" + strings.Join(c.First, ",") + "|" + strconv.FormatInt(c.Generation, 10)
	if c.NewBrowser || c.Carry != "" {
		v += "|"
	}
	if c.NewBrowser {
		v += "new"
	}
	if c.Carry != "" {
		v += "|" + c.Carry
	}
	if err := s.rdb.Set(ctx, challengeKey(token), v, life).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// Challenge returns what the challenge token holds (User "" when there is none, or it ended;
// Generation -1 for a record without one, which no user has).
func (s *Store) Challenge(ctx context.Context, token string) (Pending, error) {
	if token == "" || len(token) > 128 {
		return Pending{}, nil
	}
	v, err := s.rdb.Get(ctx, challengeKey(token)).Result()
	if errors.Is(err, redis.Nil) {
		return Pending{}, nil
	}
	if err != nil {
		return Pending{}, unavailable(err)
	}
	parts := strings.SplitN(v, "|", 5)
	for len(parts) < 5 {
		parts = append(parts, "")
	}
	c := Pending{User: parts[0], NewBrowser: parts[3] == "new", Carry: parts[4]}
	if parts[1] != "" {
		c.First = strings.Split(parts[1], ",")
	}
	if c.Generation, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
		c.Generation = -1
	}
	return c, nil
}

// EndChallenge ends the challenge token (its code was accepted).
func (s *Store) EndChallenge(ctx context.Context, token string) error {
	if err := s.rdb.Del(ctx, challengeKey(token)).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}
