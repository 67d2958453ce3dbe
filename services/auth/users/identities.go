package users

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Linked identities (D58): a person's account at an upstream provider (a connector) that signs in to a
// local account. Each user has one hash of them, auth:idents:{id}, a field per connector (one upstream
// account per connector and user); the index auth:ident:{h} names the user of an upstream account, h
// the SHA-256 of the connector and the upstream subject (any length, any bytes), so that one upstream
// account signs in to one local account only.

// Errors of linking.
var (
	// ErrIdentityTaken: the upstream account is linked to another local account.
	ErrIdentityTaken = errors.New("this account at the provider is linked to another account")
	// ErrConnectorLinked: the user has another account of that provider linked already.
	ErrConnectorLinked = errors.New("an account at this provider is linked already")
)

// Identity is one linked upstream account.
type Identity struct {
	Connector string
	Subject   string
	Email     string // the address the upstream gave when it was linked (shown, never used to sign in)
	Linked    time.Time
}

func identsKey(userID string) string { return "auth:idents:{" + userID + "}" }

func identKey(connector, subject string) string {
	sum := sha256.Sum256([]byte(connector + "\x00" + subject))
	return "auth:ident:{" + hex.EncodeToString(sum[:]) + "}"
}

// LinkIdentity links the upstream account (connector, subject) to the user id.
func (s *Store) LinkIdentity(ctx context.Context, id, connector, subject, email string, now time.Time) error {
	if subject == "" || connector == "" {
		return fmt.Errorf("link: no connector or subject")
	}
	if utf8.RuneCountInString(email) > 320 {
		email = ""
	}
	ik := identKey(connector, subject)
	cur, err := s.rdb.Get(ctx, ik).Result()
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return unavailable(err)
	case cur != id:
		if u, err := s.ByIdentity(ctx, connector, subject); err == nil && u.ID != id {
			return ErrIdentityTaken
		} else if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	if old, err := s.rdb.HGet(ctx, identsKey(id), connector).Result(); err == nil {
		if identityFrom(connector, old).Subject != subject {
			return ErrConnectorLinked
		}
	} else if !errors.Is(err, redis.Nil) {
		return unavailable(err)
	}
	value := strings.Join([]string{subject, email, strconv.FormatInt(now.Unix(), 10)}, "\n")
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, ik, id, 0)
		p.HSet(ctx, identsKey(id), connector, value)
		return nil
	}); err != nil {
		return unavailable(err)
	}
	return nil
}

// ByIdentity is the user the upstream account signs in to; ErrNotFound when none (never linked, or the
// link or the user is gone).
func (s *Store) ByIdentity(ctx context.Context, connector, subject string) (*User, error) {
	id, err := s.rdb.Get(ctx, identKey(connector, subject)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, unavailable(err)
	}
	var user func() (*User, error)
	var field *redis.StringCmd
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		user = s.QueueByID(ctx, p, id)
		field = p.HGet(ctx, identsKey(id), connector)
		return nil
	})
	u, err := user()
	if err != nil {
		return nil, err
	}
	v, err := field.Result()
	if errors.Is(err, redis.Nil) || err == nil && identityFrom(connector, v).Subject != subject {
		return nil, ErrNotFound // an unlinked identity's index left behind
	}
	if err != nil {
		return nil, unavailable(err)
	}
	return u, nil
}

// Identities lists the user's linked identities, by connector.
func (s *Store) Identities(ctx context.Context, id string) ([]Identity, error) {
	m, err := s.rdb.HGetAll(ctx, identsKey(id)).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]Identity, 0, len(m))
	for c, v := range m {
		out = append(out, identityFrom(c, v))
	}
	slices.SortFunc(out, func(a, b Identity) int { return strings.Compare(a.Connector, b.Connector) })
	return out, nil
}

// Unlink removes the user's identity at connector; ErrNotFound when there is none.
func (s *Store) Unlink(ctx context.Context, id, connector string) (Identity, error) {
	v, err := s.rdb.HGet(ctx, identsKey(id), connector).Result()
	if errors.Is(err, redis.Nil) {
		return Identity{}, ErrNotFound
	}
	if err != nil {
		return Identity{}, unavailable(err)
	}
	ident := identityFrom(connector, v)
	if err := s.rdb.HDel(ctx, identsKey(id), connector).Err(); err != nil {
		return Identity{}, unavailable(err)
	}
	if err := unindexScript.Run(ctx, s.rdb, []string{identKey(connector, ident.Subject)}, id).Err(); err != nil {
		return Identity{}, unavailable(err)
	}
	return ident, nil
}

func identityFrom(connector, v string) Identity {
	parts := strings.SplitN(v, "\n", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	at, _ := strconv.ParseInt(parts[2], 10, 64)
	return Identity{Connector: connector, Subject: parts[0], Email: parts[1], Linked: time.Unix(at, 0).UTC()}
}

// deleteIdentities removes the user's identities and their index entries (the user is gone).
func (s *Store) deleteIdentities(ctx context.Context, id string) error {
	idents, err := s.Identities(ctx, id)
	if err != nil {
		return err
	}
	for _, ident := range idents {
		if err := unindexScript.Run(ctx, s.rdb, []string{identKey(ident.Connector, ident.Subject)}, id).Err(); err != nil {
			return unavailable(err)
		}
	}
	if err := s.rdb.Del(ctx, identsKey(id)).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// CreateFederated adds a user who signed in through a connector (just in time): no password (one can
// be set with a password reset), the address verified when the upstream says so.
func (s *Store) CreateFederated(ctx context.Context, email, name string, verified bool) (*User, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > MaxNameLen {
		name = string([]rune(name)[:MaxNameLen])
	}
	u := &User{ID: newID(), Email: email, Name: name, CreatedAt: time.Now().UTC().Truncate(time.Second), EmailVerified: verified}
	fields := []any{"id", u.ID, "email", u.Email, "name", u.Name, "hash", "", "created", strconv.FormatInt(u.CreatedAt.Unix(), 10)}
	if verified {
		fields = append(fields, "verified", "1")
	}
	if err := s.insert(ctx, u, fields); err != nil {
		return nil, err
	}
	return u, nil
}
