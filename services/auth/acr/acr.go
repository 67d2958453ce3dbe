// Package acr names how a person signed in, for the ID token: the methods (amr, RFC 8176) and the
// level they reach together (acr, OpenID Connect Core 2), and what an authorization request's
// acr_values ask for. docs/auth.md "How the person signed in" documents the values;
// docs/architecture.md D20 why these.
package acr

import (
	"slices"
	"strings"
)

// Authentication method references (RFC 8176 2). A passkey adds POP, and MFA since it verified the user
// (a PIN or biometric on the device is a second factor). Each value claims only what the provider
// checked itself (docs/decisions/0069-amr-claims-only-what-was-checked.md).
const (
	PWD = "pwd" // a password
	OTP = "otp" // a TOTP code (RFC 6238)
	// RC: a single-use recovery code (a look-up secret, NIST SP 800-63B 5.1.2) in the second step. Not
	// in RFC 8176's registry, which has no value for it: private, as FED is, so that a relying party can
	// tell a sign-in that spent one of the codes kept for a lost app from one made with the app.
	RC = "rc"
	// POP: a proof of possession of a key whose storage nothing vouched for (a passkey: no attestation is
	// asked, so the authenticator's own flags say whether its key is bound to the device or synced).
	POP = "pop"
	// HWK and SWK (hardware- and software-secured key) are no longer asserted: sessions opened before
	// D69 carry them, and they still count as a held factor until those sessions end.
	HWK = "hwk"
	SWK = "swk"
	MFA = "mfa" // more than one factor
	// FED: an upstream provider (a connector, D58) vouched for the person; the one factor here, whatever
	// the upstream reported (its own amr values go to the audit trail, not into our level).
	FED = "fed"
)

// The levels (acr values) the provider asserts and honours in acr_values, lowest first.
const (
	// OneFactor: one factor, a password (or a passkey without user verification).
	OneFactor = "urn:formsservice:acr:1fa"
	// TwoFactor: two factors (password and TOTP or recovery code, or a user-verified passkey).
	TwoFactor = "urn:formsservice:acr:2fa"
	// PAPEMultiFactor is OpenID Provider Authentication Policy Extension 1.0's multi-factor policy, which
	// some relying parties send as acr_values to ask for a second factor (Auth0's convention); it is
	// honoured as TwoFactor and echoed as the acr when asked for.
	PAPEMultiFactor = "http://schemas.openid.net/pape/policies/2007/06/multi-factor"
)

// Supported lists the acr values discovery advertises.
var Supported = []string{OneFactor, TwoFactor, PAPEMultiFactor}

// Level is the acr the methods reach: TwoFactor with MFA among them, else OneFactor.
func Level(amr []string) string {
	if slices.Contains(amr, MFA) {
		return TwoFactor
	}
	return OneFactor
}

// Requested is the level an acr_values parameter asks for: its first supported value (the values are
// in order of preference, OpenID Connect Core 3.1.2.1), or "" when it names none (ok false) or is
// empty (ok true: nothing asked).
func Requested(acrValues string) (value string, ok bool) {
	fields := strings.Fields(acrValues)
	if len(fields) == 0 {
		return "", true
	}
	for _, v := range fields {
		if slices.Contains(Supported, v) {
			return v, true
		}
	}
	return "", false
}

// NeedsTwoFactor reports whether a requested acr value asks for more than one factor.
func NeedsTwoFactor(value string) bool { return value == TwoFactor || value == PAPEMultiFactor }

// Claim is the acr to put in the ID token for methods amr when requested (from Requested) was asked
// for: the requested value when the methods satisfy it (a relying party compares what it sent), else
// the level the methods reach.
func Claim(amr []string, requested string) string {
	level := Level(amr)
	if NeedsTwoFactor(requested) && level == TwoFactor {
		return requested
	}
	return level
}

// heldFactors are the methods that prove something the person holds.
var heldFactors = []string{OTP, RC, POP, HWK, SWK}

// With returns amr with the methods added, without duplicates, MFA last when two kinds of factor are
// present (something known, a password, and something held, a code or a key).
func With(amr []string, methods ...string) []string {
	out := slices.Clone(amr)
	for _, m := range methods {
		if m != MFA && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	out = slices.DeleteFunc(out, func(m string) bool { return m == MFA })
	known := slices.Contains(out, PWD) || slices.Contains(out, FED)
	held := slices.ContainsFunc(out, func(m string) bool { return slices.Contains(heldFactors, m) })
	if (known && held) || slices.Contains(methods, MFA) || slices.Contains(amr, MFA) {
		out = append(out, MFA)
	}
	return out
}
