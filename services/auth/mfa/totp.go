// Package mfa is the second factor of a sign-in: TOTP (RFC 6238) codes from an authenticator app, and
// single-use recovery codes for the day the phone is lost. It generates and checks codes
// (github.com/pquerna/otp), keeps each user's factor in Redis (store.go: the secret, the last time step
// accepted so that a code is accepted once, the recovery codes as hashes), throttles wrong codes before
// they are checked (throttle.go), seals secrets at rest when a key is configured (seal.go) and draws the
// enrolment QR code as inline SVG (qr.go). docs/architecture.md D20 records the choices.
package mfa

import (
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// The TOTP parameters every authenticator app understands (Google Authenticator ignores any other):
// HMAC-SHA1, six digits, 30-second steps, a 160-bit secret (RFC 4226 4, R6).
const (
	Period     = 30
	Digits     = 6
	SecretSize = 20
	// Skew is how many steps before and after the current one are accepted: one each way, for a phone
	// clock a little off and the seconds it takes to type a code (RFC 6238 5.2 recommends one).
	Skew = 1
)

var opts = totp.ValidateOpts{Period: Period, Skew: Skew, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// ErrInvalidCode is a code that is not six digits.
var ErrInvalidCode = errors.New("a code is six digits")

// Key is a new TOTP secret with its otpauth:// URI (what the QR code carries).
type Key struct {
	// Secret is the shared secret in base32 without padding, as people type it into an app.
	Secret string
	// URI is otpauth://totp/Issuer:account?secret=…&issuer=…&algorithm=SHA1&digits=6&period=30.
	URI string
}

// NewKey draws a new secret for account (the e-mail address, shown in the app) of issuer (the
// product's name, shown in the app).
func NewKey(issuer, account string) (Key, error) {
	k, err := totp.Generate(totp.GenerateOpts{Issuer: issuer, AccountName: account, Period: Period, SecretSize: SecretSize,
		Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return Key{}, err
	}
	return Key{Secret: k.Secret(), URI: k.URL()}, nil
}

// Code is the code of secret at t (what the app shows then). Tests use it as the app.
func Code(secret string, t time.Time) (string, error) {
	return totp.GenerateCodeCustom(secret, t, opts)
}

// NormalizeCode strips what people type around a code (spaces, a dash in "123 456") and checks that six
// digits remain.
func NormalizeCode(s string) (string, error) {
	s = strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' || r == '\u00a0' {
			return -1
		}
		return r
	}, s)
	if len(s) != Digits {
		return "", ErrInvalidCode
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", ErrInvalidCode
		}
	}
	return s, nil
}

// Step is a TOTP time step: the Unix time divided by Period.
func Step(t time.Time) int64 { return t.Unix() / Period }

// Result is what a checked code turned out to be.
type Result int

// The results of Match.
const (
	Wrong    Result = iota // no step near the time has this code
	Accepted               // a step later than the last accepted one has it
	Replayed               // only a step already accepted (or an earlier one) has it: RFC 6238 5.2 refuses it
)

// Match returns the time step whose code is code among the steps within Skew of t, and whether it is
// later than after (the last step accepted before: an accepted code is never accepted again). Every
// candidate is compared in constant time.
func Match(secret, code string, t time.Time, after int64) (int64, Result) {
	now := Step(t)
	var found int64
	res := Wrong
	for s := now - Skew; s <= now+Skew; s++ {
		want, err := totp.GenerateCodeCustom(secret, time.Unix(s*Period, 0), opts)
		if err != nil {
			return 0, Wrong
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) != 1 {
			continue
		}
		switch {
		case s > after && res != Accepted:
			found, res = s, Accepted
		case s <= after && res == Wrong:
			res = Replayed
		}
	}
	return found, res
}
