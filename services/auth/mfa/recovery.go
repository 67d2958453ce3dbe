package mfa

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// RecoveryCodes is how many recovery codes a user gets at once.
const RecoveryCodes = 10

// recoveryAlphabet has the 31 letters and digits that cannot be mistaken for each other when read from
// paper (no 0/o, 1/l/i): each character carries almost 5 bits.
const recoveryAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"

// recoveryLen is the characters of a code: 16 × log2(31) = 79 random bits, written as four groups of
// four. At 79 bits a single SHA-256 is enough to store it (docs/architecture.md D20): no one searches
// 2^79 hashes offline.
const recoveryLen = 16

// NewRecoveryCodes draws RecoveryCodes new codes, formatted "abcd-efgh-jkmn-pqrs".
func NewRecoveryCodes() []string {
	codes := make([]string, RecoveryCodes)
	for i := range codes {
		codes[i] = newRecoveryCode()
	}
	return codes
}

func newRecoveryCode() string {
	// 31 letters would bias a byte-modulo draw; draw bytes and keep those below 248 (8 × 31).
	var b strings.Builder
	buf := make([]byte, 32)
	for b.Len() < recoveryLen+3 {
		_, _ = rand.Read(buf)
		for _, c := range buf {
			if c >= 248 || b.Len() >= recoveryLen+3 {
				continue
			}
			if n := b.Len(); n == 4 || n == 9 || n == 14 {
				b.WriteByte('-')
			}
			b.WriteByte(recoveryAlphabet[int(c)%len(recoveryAlphabet)])
		}
	}
	return b.String()
}

// NormalizeRecoveryCode is the code as stored: lower case, without the dashes and spaces people type
// or copy, or "" when it cannot be a recovery code.
func NormalizeRecoveryCode(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r == '-' || r == ' ' || r == '\u00a0':
			continue
		case r < 128 && strings.IndexByte(recoveryAlphabet, byte(r)) >= 0:
			b.WriteRune(r)
		default:
			return ""
		}
		if b.Len() > recoveryLen {
			return ""
		}
	}
	if b.Len() != recoveryLen {
		return ""
	}
	return b.String()
}

// LooksLikeRecoveryCode tells a recovery code from a TOTP code in the one field the second step has.
func LooksLikeRecoveryCode(s string) bool { return NormalizeRecoveryCode(s) != "" }

// hashRecoveryCode is the stored form: SHA-256 over the user's ID and the normalised code, so that the
// same code of two users (never drawn in practice) hashes apart and a hash names no other account.
func hashRecoveryCode(userID, normalized string) string {
	h := sha256.Sum256([]byte("formsservice recovery code\x00" + userID + "\x00" + normalized))
	return hex.EncodeToString(h[:])
}
