package config

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// AuthPasskeys configures passkeys (WebAuthn): signing in with a passkey on the hosted page and adding,
// listing and removing passkeys at /account/passkeys. The relying party ID is the issuer's host name and
// the only origin accepted is the issuer's (docs/auth.md, "Passkeys").
type AuthPasskeys struct {
	// Enabled offers passkeys; default true. With an issuer on an IP address (http://127.0.0.1:8080;
	// the dev server's is http://localhost:8080 for this reason, D74) they cannot work (WebAuthn needs a
	// domain as relying party ID) and are not offered, whatever this says.
	Enabled *bool `json:"enabled,omitempty"`
	// RPName is the name the browser and the authenticator show when a passkey is created and chosen
	// ("Save a passkey for …"); default the issuer's host name.
	RPName string `json:"rpName,omitempty"`
	// Timeout bounds one ceremony: the browser is asked to finish within it, and its challenge lives that
	// long in Redis. Default 5m; 1m to 10m (WebAuthn's recommended range for ceremonies that verify the
	// user is 5 to 10 minutes).
	Timeout Duration `json:"timeout,omitempty"`
}

// Bounds of AuthPasskeys.
const (
	DefaultPasskeyTimeout = 5 * time.Minute
	MaxPasskeyRPName      = 64 // authenticators may cut the name at 64 bytes
)

// On reports whether passkeys are enabled (the default).
func (p AuthPasskeys) On() bool { return p.Enabled == nil || *p.Enabled }

func (p *AuthPasskeys) applyDefaults() {
	setDuration(&p.Timeout, DefaultPasskeyTimeout)
}

func (p AuthPasskeys) validate() []error {
	var errs []error
	if len(p.RPName) > MaxPasskeyRPName || !utf8.ValidString(p.RPName) {
		errs = append(errs, fmt.Errorf("auth.passkeys.rpName: at most %d bytes of UTF-8", MaxPasskeyRPName))
	}
	if t := p.Timeout.D(); t != 0 && (t < time.Minute || t > 10*time.Minute) {
		errs = append(errs, fmt.Errorf("auth.passkeys.timeout %s: between 1m and 10m", t))
	}
	return errs
}
