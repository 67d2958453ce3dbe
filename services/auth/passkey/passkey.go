// Package passkey is signing in with passkeys (WebAuthn Level 3 on github.com/go-webauthn/webauthn):
// the relying party derived from the issuer (its host name is the RP ID, its origin the one origin
// accepted), the registration and sign-in ceremonies, and the storage in Redis of each user's named
// passkeys and of the ceremonies' challenges (single use, expiring, bound to the browser that asked).
//
// The provider (package auth) mounts the pages and endpoints; this package knows nothing of HTTP beyond
// the JSON the browser sends. docs/architecture.md (D21) records why it is built this way.
package passkey

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// Errors callers tell apart. A ceremony the browser's answer fails is a *Refusal (errors.Is ErrRefused).
var (
	// ErrNoRelyingParty: the issuer's host is an IP address, which WebAuthn cannot use as an RP ID.
	ErrNoRelyingParty = errors.New("passkeys need the issuer to be a host name, not an IP address")
	ErrRefused        = errors.New("the passkey was not accepted")
	ErrTooMany        = fmt.Errorf("at most %d passkeys per account", MaxPerUser)
	ErrName           = fmt.Errorf("a passkey's name is 1 to %d characters without control characters", MaxNameLen)
	ErrNotFound       = errors.New("no such passkey")
	ErrUnavailable    = storeerr.Unavailable("passkey store unavailable")
)

// Bounds that do not depend on how a user behaves.
const (
	// MaxPerUser bounds the passkeys of one account (the Redis hash of a user stays small).
	MaxPerUser = 20
	// MaxNameLen bounds a passkey's name, in characters.
	MaxNameLen = 64
	// maxResponse bounds the browser's JSON answer to a ceremony (a credential ID is at most 1023 bytes,
	// a public key a few hundred; attestation is not asked for).
	maxResponse = 16 << 10
)

// Reasons a ceremony is refused: a closed vocabulary, for the audit trail and the metrics.
const (
	ReasonExpired          = "expired"           // no such ceremony: too late, used already, or another browser's
	ReasonMalformed        = "malformed"         // the browser's answer does not parse
	ReasonWrongOrigin      = "wrong_origin"      // collected on another origin than the issuer's
	ReasonUserVerification = "user_verification" // the authenticator did not verify the person (UV flag)
	ReasonUnknownPasskey   = "unknown_passkey"   // no such user, or the user has no such passkey (removed)
	ReasonCloned           = "cloned"            // the signature counter did not go up: a copied authenticator
	ReasonDisabled         = "disabled"          // a valid passkey of a disabled account
	ReasonExists           = "exists"            // this authenticator's passkey is registered already
	ReasonInvalid          = "invalid"           // any other check of the specification (challenge, RP ID, signature)
)

// Refusal is a ceremony the browser's answer failed; Reason is one of the Reason constants.
type Refusal struct {
	Reason string
	// Passkey is the passkey concerned when it is known (a cloned one, a disabled account's).
	Passkey *Passkey
	// UserID is the account concerned when it is known.
	UserID string
	err    error
}

func (r *Refusal) Error() string {
	if r.err != nil {
		return fmt.Sprintf("passkey refused (%s): %v", r.Reason, r.err)
	}
	return "passkey refused: " + r.Reason
}

// Is makes every Refusal match ErrRefused.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

func refuse(reason string, err error) *Refusal { return &Refusal{Reason: reason, err: err} }

// Reason is the refusal's reason, or "" when err is not a refusal.
func Reason(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

// RelyingParty is the WebAuthn relying party of one issuer: the RP ID is the issuer's host name and the
// only origin accepted is the issuer's origin, compared exactly (scheme, host and port), so an assertion
// made on any other origin — another port, a sibling subdomain, a look-alike — is refused even when the
// browser let that origin use the RP ID.
type RelyingParty struct {
	// ID is the RP ID: the issuer's host name.
	ID string
	// Origin is scheme://host[:port] of the issuer, as browsers write it into clientDataJSON.
	Origin string
	// Name is shown by the browser when a passkey is created and chosen.
	Name string
	// Timeout bounds a ceremony (the browser's timeout, and the challenge's life in Redis).
	Timeout time.Duration
	wa      *webauthn.WebAuthn
}

// NewRelyingParty derives the relying party from the issuer URL. name defaults to the host name.
func NewRelyingParty(issuer, name string, timeout time.Duration) (*RelyingParty, error) {
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("passkey: issuer %q: not an http(s) URL", issuer)
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if net.ParseIP(host) != nil {
		return nil, ErrNoRelyingParty
	}
	port := u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = "" // browsers leave the default port out of an origin
	}
	origin := u.Scheme + "://" + host
	if port != "" {
		origin += ":" + port
	}
	if name == "" {
		name = host
	}
	rp := &RelyingParty{ID: host, Origin: origin, Name: name, Timeout: timeout}
	rk := true
	rp.wa, err = webauthn.New(&webauthn.Config{
		RPID:          host,
		RPDisplayName: name,
		RPOrigins:     []string{origin},
		// A passkey is the only factor of a passkey sign-in: the authenticator must verify the person
		// (PIN, biometrics or screen lock), and must keep the credential itself (discoverable), so that
		// the person need not type their address first.
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			RequireResidentKey: &rk,
			ResidentKey:        protocol.ResidentKeyRequirementRequired,
			UserVerification:   protocol.VerificationRequired,
		},
		// No attestation: we trust no particular make of authenticator, and asking would only reveal it.
		AttestationPreference: protocol.PreferNoAttestation,
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Enforce: true, Timeout: timeout, TimeoutUVD: timeout},
			Registration: webauthn.TimeoutConfig{Enforce: true, Timeout: timeout, TimeoutUVD: timeout},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("passkey: %w", err)
	}
	return rp, nil
}

// Account is the person a passkey belongs to. Its ID is also the WebAuthn user handle: the account's
// random ID (the OpenID subject), which is never reused, names no person, and leads straight to the
// account's passkeys in one Redis slot.
type Account struct {
	ID    string
	Email string
	Name  string
	// Disabled accounts cannot sign in, with a passkey or otherwise.
	Disabled bool
}

// Passkey is one registered passkey of an account.
type Passkey struct {
	// ID is the credential ID, base64url without padding.
	ID       string
	Name     string
	Created  time.Time
	LastUsed time.Time // zero: never used to sign in
	// SignCount is the authenticator's signature counter as last seen (0 for authenticators without one,
	// as most synced passkeys are).
	SignCount uint32
	// Synced: the authenticator may back the passkey up and sync it to other devices (the BE flag).
	Synced bool
	// ClonedAt is the last time an assertion whose counter did not go up was refused (zero: never).
	ClonedAt time.Time
	cred     webauthn.Credential
}

// AMR are the authentication methods (RFC 8176) a sign-in with this passkey proves: possession of a key
// ("pop"), and, since user verification is required, a second factor held by the authenticator (PIN or
// biometrics): "mfa". Whether the key is bound to hardware ("hwk") or can leave it ("swk") is not
// claimed: without attestation only the authenticator's own backup flags say so, and any software can
// set them (D69). Synced is shown to the person, never asserted to an application.
func (p *Passkey) AMR() []string { return []string{acr.POP, acr.MFA} }

// CheckName trims a passkey's name and checks it.
func CheckName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxNameLen {
		return "", ErrName
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == 0x2028 || r == 0x2029 {
			return "", ErrName
		}
	}
	return name, nil
}

// user is an account with its passkeys, as the library wants it.
type user struct {
	acct  Account
	creds []webauthn.Credential
}

func (u *user) WebAuthnID() []byte   { return []byte(u.acct.ID) }
func (u *user) WebAuthnName() string { return u.acct.Email }
func (u *user) WebAuthnDisplayName() string {
	if u.acct.Name != "" {
		return u.acct.Name
	}
	return u.acct.Email
}
func (u *user) WebAuthnCredentials() []webauthn.Credential { return u.creds }

func newUser(acct Account, keys []Passkey) *user {
	u := &user{acct: acct}
	for _, p := range keys {
		c := p.cred
		c.Authenticator.SignCount = p.SignCount // the counter as stored, which the library compares
		u.creds = append(u.creds, c)
	}
	return u
}

// validHandle is a user handle that can be an account ID: at most 64 bytes (WebAuthn's bound) of
// lower-case hex, so that nothing else reaches a Redis key name.
func validHandle(h []byte) bool {
	if len(h) == 0 || len(h) > 64 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
