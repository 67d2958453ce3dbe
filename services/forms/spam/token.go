package spam

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// A form token says when a page got its form: the issue time in milliseconds and an HMAC-SHA256 of the
// form's id and that time, under the service's key; base64url, 8+16 bytes. The time-to-submit signal
// is the time from issue to post. A token that does not verify, or is older than TokenLifetime, is
// treated as no token (neutral): a page cached for a day must not make its senders spammers.
const TokenLifetime = 24 * time.Hour

const tokenMACLen = 16

// IssueToken returns a token for form issued at now.
func IssueToken(key []byte, form string, now time.Time) string {
	var b [8 + tokenMACLen]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli()))
	copy(b[8:], tokenMAC(key, form, b[:8]))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// TokenAge returns how long ago token was issued for form, and false when it does not verify, comes
// from the future (beyond a second of clock skew) or is older than TokenLifetime.
func TokenAge(key []byte, form, token string, now time.Time) (time.Duration, bool) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) != 8+tokenMACLen || !hmac.Equal(b[8:], tokenMAC(key, form, b[:8])) {
		return 0, false
	}
	issued := time.UnixMilli(int64(binary.BigEndian.Uint64(b[:8])))
	age := now.Sub(issued)
	if age < -time.Second || age > TokenLifetime {
		return 0, false
	}
	return max(age, time.Millisecond), true // a token of this very millisecond is still a fast one
}

func tokenMAC(key []byte, form string, issued []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("formsservice form token\x00"))
	m.Write([]byte(form))
	m.Write([]byte{0})
	m.Write(issued)
	return m.Sum(nil)[:tokenMACLen]
}
