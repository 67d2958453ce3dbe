package sso

import (
	"crypto/sha256"
	"encoding/base64"
)

// SID is the OpenID Connect session ID of a sign-in session (its ID, see ID): the sid claim of every ID
// token issued in it, whichever client, and of the logout tokens that end it (Back-Channel Logout 1.0).
// It is derived, not stored, so that logout computes it from the session it ends; and derived one more
// time, so that the value a relying party sees is not the key the session lives under in Redis nor the
// name the account page's actions take.
func SID(sessionID string) string {
	if sessionID == "" {
		return ""
	}
	h := sha256.Sum256([]byte("oidc-sid\x00" + sessionID))
	return base64.RawURLEncoding.EncodeToString(h[:18])
}
