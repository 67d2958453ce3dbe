// Package device issues and checks device cookies (OWASP's "Slow Down Online Guessing Attacks with
// Device Cookies"): a browser that signed in to an account successfully gets a signed token naming that
// account, and later sign-ins to the same account from it count against a budget of that browser
// alone (package throttle), so that guesses from anywhere else can never lock it out.
//
// A token is "v2.<account>.<id>.<issued>.<generation>.<mac>": account is an HMAC of the account's
// canonical e-mail address (the cookie names no address and cannot be moved to another account), id a
// random identifier (the browser's budget; kept when the browser signs in again, so that a browser has
// one budget per account however often it signs in), issued a Unix time, generation the account's
// sign-out generation when it was issued (a sign-out everywhere — a new password, a reset — ends every
// cookie of the account: the caller compares it with the account's, D51), and mac an HMAC-SHA256 of the
// rest, all base64url. The keys are derived from the signing key (keys.Set.Secrets), the previous key's
// still accepted during a rotation. v1 tokens (without a generation) are no longer accepted.
package device

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Purpose is the HKDF info string the keys are derived with.
const Purpose = "formsservice auth device-cookie v1"

// Keys sign and check tokens: Current signs, every one of them verifies.
type Keys struct {
	Current  []byte
	Previous [][]byte
}

const version = "v2"

// b64 is strict: a MAC has one spelling (lax decoding would accept other final characters).
var b64 = base64.RawURLEncoding.Strict()

func mac(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// accountTag is the account as the token names it: a keyed hash, not the address.
func accountTag(key []byte, account string) string {
	return b64.EncodeToString(mac(key, "account", account)[:16])
}

// Token is what a checked device cookie says.
type Token struct {
	ID         string // the browser's budget
	Generation int64  // the account's sign-out generation when it was issued
}

const idLen = 16

// NewID draws a browser's ID.
func NewID() string {
	id := make([]byte, idLen)
	_, _ = rand.Read(id)
	return b64.EncodeToString(id)
}

// Issue returns a token for account (its canonical e-mail address) at the account's sign-out generation
// gen, issued at now, for the browser id (NewID for a browser that has none).
func Issue(k Keys, account, id string, gen int64, now time.Time) string {
	body := version + "." + accountTag(k.Current, account) + "." + id + "." + strconv.FormatInt(now.Unix(), 10) + "." + strconv.FormatInt(gen, 10)
	return body + "." + b64.EncodeToString(mac(k.Current, body))
}

// Check returns what token says when it is a token of ours for account, issued within lifetime before
// now; ok is false for anything else (another account, a forged or expired token, garbage). Whether its
// generation is still the account's is the caller's to compare.
func Check(k Keys, token, account string, now time.Time, lifetime time.Duration) (t Token, ok bool) {
	if len(token) > 256 {
		return Token{}, false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 6 || parts[0] != version {
		return Token{}, false
	}
	// The MAC is compared in its encoding, not decoded: a decoder skips CR and LF, so "…hr\rug" would
	// decode to the MAC of "…hrug" and a token the key never issued would pass (FuzzCheck found it).
	got := []byte(parts[5])
	body := strings.Join(parts[:5], ".")
	for _, key := range append([][]byte{k.Current}, k.Previous...) {
		if !hmac.Equal(got, []byte(b64.EncodeToString(mac(key, body)))) {
			continue
		}
		if !hmac.Equal([]byte(parts[1]), []byte(accountTag(key, account))) {
			return Token{}, false
		}
		issued, err := strconv.ParseInt(parts[3], 10, 64)
		if err != nil {
			return Token{}, false
		}
		gen, err := strconv.ParseInt(parts[4], 10, 64)
		if err != nil {
			return Token{}, false
		}
		age := now.Sub(time.Unix(issued, 0))
		if age < -time.Hour || age > lifetime { // an hour of clock skew between replicas is tolerated
			return Token{}, false
		}
		return Token{ID: parts[2], Generation: gen}, true
	}
	return Token{}, false
}
