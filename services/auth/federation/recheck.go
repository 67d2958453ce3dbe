package federation

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"

	"github.com/formsservice/formsservice/services/auth/claims"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Staying correct after sign-in (docs/auth.md, D78): a grant signed in through a connector that can
// check its accounts again keeps the connector's state (Identity.Recheck) in its session, sealed, and
// each refresh at least RecheckEvery after the last check asks the upstream again.

// Rechecker is an upstream whose accounts can be checked again at a refresh (docs/auth.md).
// Recheck answers the state to keep (it may change: a rotated refresh token), or an error wrapping
// upstream.ErrNotAllowed (the account is gone or no longer allowed: the grant ends) or
// upstream.ErrUnreachable (the upstream is down: the connector's policy decides).
type Rechecker interface {
	Recheck(ctx context.Context, state string) (string, error)
}

// RecheckPurpose names the secret the state is sealed with (keys.Set.Secrets: derived from the
// signing key, so the previous key's still opens the state after a rotation).
const RecheckPurpose = "formsservice auth upstream recheck state v1"

// SealKeys are the secrets of RecheckPurpose: the current one seals, every one opens.
type SealKeys struct {
	Current []byte
	Others  [][]byte
}

// The results of a re-check at a refresh (the metric's result label, the audit trail's reason).
const (
	RecheckNotDue          = "not_due"           // checked less than recheckEvery ago: not asked
	RecheckOK              = "ok"                // the upstream still vouches for the person
	RecheckNotAllowed      = "not_allowed"       // the upstream refused: the grant ends
	RecheckUnreachableKept = "unreachable_kept"  // the upstream is down; onUpstreamDown keep: skipped
	RecheckUnreachableEnd  = "unreachable_ended" // the upstream is down; onUpstreamDown end: the grant ends
	RecheckConnectorGone   = "connector_removed" // the configuration no longer has a connector that re-checks: the grant ends
	RecheckUnreadable      = "state_unreadable"  // the sealed state does not open (a key rotated out): the grant ends
)

// Ends reports whether a re-check's result ends the grant.
func Ends(result string) bool {
	switch result {
	case RecheckNotAllowed, RecheckUnreachableEnd, RecheckConnectorGone, RecheckUnreadable:
		return true
	}
	return false
}

type sealer struct {
	current cipher.AEAD
	all     []cipher.AEAD
}

func newSealer(k SealKeys) (*sealer, error) {
	if k.Current == nil {
		return nil, nil
	}
	s := &sealer{}
	for i, key := range append([][]byte{k.Current}, k.Others...) {
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			s.current = aead
		}
		s.all = append(s.all, aead)
	}
	return s, nil
}

// errUnsealed: no key, or none that opens the state.
var errUnsealed = errors.New("federation: the re-check state does not open")

// ad binds a sealed state to its user and connector: a copy in another grant's session does not open.
func ad(subject, connector string) []byte { return []byte(subject + "\x00" + connector) }

func (s *sealer) seal(subject, connector, state string) (string, error) {
	if s == nil {
		return "", errUnsealed
	}
	nonce := make([]byte, s.current.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(s.current.Seal(nonce, nonce, []byte(state), ad(subject, connector))), nil
}

func (s *sealer) open(subject, connector, sealed string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(sealed)
	if s == nil || err != nil {
		return "", errUnsealed
	}
	for _, aead := range s.all {
		if len(b) < aead.NonceSize() {
			break
		}
		if plain, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], ad(subject, connector)); err == nil {
			return string(plain), nil
		}
	}
	return "", errUnsealed
}

// Configured is any connector's client (an Upstream, or one signed in another way: a directory's
// password form).
type Configured interface{ Config() config.Connector }

// KeepForRecheck is what a grant of subject signed in through connector c with id keeps for its
// re-checks: nil when there is nothing to re-check (the connector gave no state, or cannot re-check).
// Every sign-in through a connector calls it before the session starts (attempt.upstream in package
// signin); Recheck then finds the connector by its ID.
func (k *Kit) KeepForRecheck(c Configured, subject string, id *upstream.Identity) *claims.Upstream {
	if _, ok := c.(Rechecker); !ok || id.Recheck == "" {
		return nil
	}
	sealed, err := k.seal.seal(subject, c.Config().ID, id.Recheck)
	if err != nil {
		k.log.Error("a connector's re-check state was not kept", "connector", c.Config().ID, "err", err)
		return nil
	}
	return &claims.Upstream{Connector: c.Config().ID, Sealed: sealed, CheckedAt: k.now().UnixMilli()}
}

// Recheck is the re-check of a grant of subject at a refresh, by the rules of its connector in rt's
// configuration: not due (RecheckEvery since the last), asked (up then holds the new state and time),
// or ended (Ends). err explains a result that ends the grant or skips the check, for the log; it never
// holds the state.
func (k *Kit) Recheck(ctx context.Context, rt *realm.Realm, subject string, up *claims.Upstream) (result string, err error) {
	cfg, ok := rt.Config.Auth.ConnectorByID(up.Connector)
	if !ok {
		return RecheckConnectorGone, nil
	}
	now := k.now()
	if last := time.UnixMilli(up.CheckedAt); now.Sub(last) < cfg.RecheckEvery.D() {
		return RecheckNotDue, nil
	}
	conn, err := k.recheckable(rt, cfg)
	if err != nil { // configured, but its secret cannot be read now: as if its upstream were down
		return k.down(cfg, err)
	}
	rc, ok := conn.(Rechecker)
	if !ok {
		return RecheckConnectorGone, nil
	}
	state, err := k.seal.open(subject, up.Connector, up.Sealed)
	if err != nil {
		return RecheckUnreadable, err
	}
	next, err := rc.Recheck(ctx, state)
	switch {
	case errors.Is(err, upstream.ErrNotAllowed):
		return RecheckNotAllowed, err
	case err != nil:
		return k.down(cfg, err)
	}
	sealed, err := k.seal.seal(subject, up.Connector, next)
	if err != nil {
		return RecheckUnreadable, err
	}
	up.Sealed, up.CheckedAt = sealed, now.UnixMilli()
	return RecheckOK, nil
}

// recheckable is connector c as built from rt: a directory (type ldap, which signs in with a password,
// not a redirect) or an upstream of the redirect kind.
func (k *Kit) recheckable(rt *realm.Realm, c config.Connector) (Configured, error) {
	if c.Type == config.TypeLDAP {
		return k.Directory(rt, c.ID)
	}
	return k.Connector(rt, c.ID)
}

// down is a re-check that could not reach the upstream, by the connector's onUpstreamDown.
func (k *Kit) down(c config.Connector, err error) (string, error) {
	if c.OnUpstreamDown == config.UpstreamDownEnd {
		return RecheckUnreachableEnd, err
	}
	return RecheckUnreachableKept, err
}
