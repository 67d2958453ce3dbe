package federation

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/samlsp"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Single logout with an upstream (D89): what a sign-in through a SAML connector keeps with our session
// for it (the IdP's principal, sealed as the re-check states are, bound to the user and connector),
// found by the session or, for the IdP's own LogoutRequest, by the NameID's hash; and the pending
// logouts we sent, each taken once.

// LogoutLifetime bounds how long we wait for the IdP's answer to our LogoutRequest.
const LogoutLifetime = 10 * time.Minute

// maxSessionsPerName bounds the sessions one upstream name lists (as sso bounds a user's sessions).
const maxSessionsPerName = 64

// SessionLogout is a session's single-logout record: the connector, the user, the session's ID, and
// the connector's opened principal.
type SessionLogout struct {
	Connector string `json:"c"`
	User      string `json:"u"`
	Session   string `json:"-"`
	Sealed    string `json:"p"`
	Principal string `json:"-"`
}

func sessionLogoutKey(sessionID string) string { return "auth:fed:slo:{" + sessionID + "}" }

// nameHash is an upstream name's SHA-256 (no name in Redis, in a key or a record).
func nameHash(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// nameKey lists the sessions of one upstream name, by its hash.
func nameKey(connector, hash string) string { return "auth:fed:slo-name:{" + connector + "}:" + hash }

func pendingLogoutKey(state string) string { return "auth:fed:slo-pending:{" + state + "}" }

func sloAD(connector string) string { return "slo:" + connector }

// LogoutToKeep is a sign-in's single-logout record before its session opens: the connector, the
// upstream name's SHA-256 and the principal sealed for the user (nothing in it is readable; the second
// step of a sign-in carries it as it is).
type LogoutToKeep struct {
	Connector string `json:"c"`
	NameHash  string `json:"h"`
	Sealed    string `json:"p"`
}

// SealLogout seals what single logout will need of the sign-in of user through connector as name:
// principal (opaque), bound to the user and the connector.
func (k *Kit) SealLogout(user, connector, name, principal string) (*LogoutToKeep, error) {
	sealed, err := k.seal.seal(user, sloAD(connector), principal)
	if err != nil {
		return nil, err
	}
	return &LogoutToKeep{Connector: connector, NameHash: nameHash(name), Sealed: sealed}, nil
}

// KeepLogout keeps l with user's session sessionID for ttl (the session's lifetime), where the IdP's
// LogoutRequest for its name finds it.
func (k *Kit) KeepLogout(ctx context.Context, l *LogoutToKeep, user, sessionID string, ttl time.Duration) error {
	b, _ := json.Marshal(SessionLogout{Connector: l.Connector, User: user, Sealed: l.Sealed})
	nk := nameKey(l.Connector, l.NameHash)
	_, err := k.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, sessionLogoutKey(sessionID), b, ttl)
		p.SAdd(ctx, nk, sessionID)
		p.Expire(ctx, nk, ttl)
		return nil
	})
	if err != nil {
		return err
	}
	if n, err := k.rdb.SCard(ctx, nk).Result(); err == nil && n > maxSessionsPerName {
		_ = k.rdb.SPop(ctx, nk).Err() // the index stays bounded; a dropped session ends at its time
	}
	return nil
}

// LogoutOf is session sessionID's single-logout record, opened (nil: none, or it does not open).
func (k *Kit) LogoutOf(ctx context.Context, sessionID string) (*SessionLogout, error) {
	b, err := k.rdb.Get(ctx, sessionLogoutKey(sessionID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var s SessionLogout
	if json.Unmarshal(b, &s) != nil {
		return nil, nil
	}
	if s.Principal, err = k.seal.open(s.User, sloAD(s.Connector), s.Sealed); err != nil {
		k.log.Warn("a session's single-logout record does not open", "connector", s.Connector)
		return nil, nil
	}
	s.Session = sessionID
	return &s, nil
}

// LogoutsNamed are the single-logout records of the sessions signed in through connector as name.
func (k *Kit) LogoutsNamed(ctx context.Context, connector, name string) ([]*SessionLogout, error) {
	ids, err := k.rdb.SMembers(ctx, nameKey(connector, nameHash(name))).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var out []*SessionLogout
	for _, id := range ids {
		s, err := k.LogoutOf(ctx, id)
		if err != nil {
			return nil, err
		}
		if s != nil && s.Connector == connector {
			out = append(out, s)
		}
	}
	return out, nil
}

// ForgetLogout removes session sessionID's record (its session ended), and its entry under name.
func (k *Kit) ForgetLogout(ctx context.Context, connector, name, sessionID string) {
	_ = k.rdb.Del(ctx, sessionLogoutKey(sessionID)).Err()
	_ = k.rdb.SRem(ctx, nameKey(connector, nameHash(name)), sessionID).Err()
}

// PendingLogout is a LogoutRequest we sent: its connector, its ID, and where the browser goes when the
// IdP answered ("" : our signed-out page).
type PendingLogout struct {
	Connector string `json:"c"`
	RequestID string `json:"i"`
	Redirect  string `json:"r,omitempty"`
}

// LogoutState is a fresh RelayState for a LogoutRequest: it names the pending logout.
func LogoutState() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// StartLogout keeps the pending logout p under state for LogoutLifetime.
func (k *Kit) StartLogout(ctx context.Context, state string, p PendingLogout) error {
	b, _ := json.Marshal(p)
	if err := k.rdb.Set(ctx, pendingLogoutKey(state), b, LogoutLifetime).Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// TakeLogout takes (once) the pending logout under state (nil: none, expired, or taken).
func (k *Kit) TakeLogout(ctx context.Context, state string) (*PendingLogout, error) {
	if state == "" || len(state) > 64 {
		return nil, nil
	}
	b, err := k.rdb.GetDel(ctx, pendingLogoutKey(state)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var p PendingLogout
	if json.Unmarshal(b, &p) != nil || p.RequestID == "" {
		return nil, nil
	}
	return &p, nil
}

// SAMLConnector is the realm's connector id when it is a SAML connector (nil: none such).
func (k *Kit) SAMLConnector(rt *realm.Realm, id string) *samlsp.Connector {
	c, ok := rt.Config.Auth.ConnectorByID(id)
	if !ok || c.Type != config.TypeSAML {
		return nil
	}
	conn, err := k.Connector(rt, id)
	if err != nil {
		return nil
	}
	sp, _ := conn.(*samlsp.Connector)
	return sp
}

// SingleLogout goes on with the logout of the session whose record is s (the session has ended here)
// at its SAML IdP: the record is forgotten, and, when the connector offers single logout, the pending
// logout kept (where the browser goes once the IdP answered: redirect, "" for our signed-out page) and
// the IdP's URL with our signed LogoutRequest returned. "" : no single logout (the connector is gone or
// has none); an error: none could be started (the caller logs it; the logout ends here).
func (k *Kit) SingleLogout(ctx context.Context, rt *realm.Realm, s *SessionLogout, redirect string) (string, error) {
	p, err := samlsp.ParsePrincipal(s.Principal)
	if err != nil {
		return "", nil
	}
	k.ForgetLogout(ctx, s.Connector, p.NameID, s.Session)
	sp := k.SAMLConnector(rt, s.Connector)
	if sp == nil || !sp.SingleLogout(ctx) {
		return "", nil
	}
	state := LogoutState()
	to, requestID, err := sp.LogoutRequestURL(ctx, p, state)
	if err != nil {
		return "", err
	}
	if err := k.StartLogout(ctx, state, PendingLogout{Connector: s.Connector, RequestID: requestID, Redirect: redirect}); err != nil {
		return "", err
	}
	return to, nil
}
