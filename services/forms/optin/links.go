package optin

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strconv"
	"time"
)

// Links are signed, not stored (docs/architecture.md, D24): a confirmation link carries the entry's id,
// its expiry and an HMAC-SHA256 over both; an unsubscribe link the id and an HMAC over it. The key is
// the store's link key. So a link cannot be forged or stretched, needs no record of its own, and an
// unsubscribe link keeps working as long as the entry does; a confirmation is used once because the
// entry leaves the pending state, and a sign-up after an unsubscription gets a new id, which retires
// the links sent before.

// Paths of the double opt-in's pages.
const (
	ConfirmPath     = "/waitlist/confirm"
	UnsubscribePath = "/waitlist/unsubscribe"
)

// signer signs and checks links with one key.
type signer struct{ key []byte }

func (s signer) mac(purpose, id, exp string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write([]byte(exp))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// confirmURL is base + ConfirmPath?e=<id>&x=<unix expiry>&s=<mac>.
func (s signer) confirmURL(base, id string, until time.Time) string {
	exp := strconv.FormatInt(until.Unix(), 10)
	return base + ConfirmPath + "?" + url.Values{"e": {id}, "x": {exp}, "s": {s.mac("confirm", id, exp)}}.Encode()
}

// unsubscribeURL is base + UnsubscribePath?e=<id>&s=<mac>.
func (s signer) unsubscribeURL(base, id string) string {
	return base + UnsubscribePath + "?" + url.Values{"e": {id}, "s": {s.mac("unsubscribe", id, "")}}.Encode()
}

// linkState is what a link's parameters say.
type linkState int

const (
	linkForged  linkState = iota // not signed by the key (or not a link at all)
	linkExpired                  // signed, past its time
	linkGood
)

// checkConfirm checks a confirmation link's parameters at now.
func (s signer) checkConfirm(id, exp, sig string, now time.Time) linkState {
	if id == "" || len(id) > 64 || !hmac.Equal([]byte(sig), []byte(s.mac("confirm", id, exp))) {
		return linkForged
	}
	until, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return linkForged
	}
	if now.Unix() > until {
		return linkExpired
	}
	return linkGood
}

// checkUnsubscribe checks an unsubscribe link's parameters.
func (s signer) checkUnsubscribe(id, sig string) bool {
	return id != "" && len(id) <= 64 && hmac.Equal([]byte(sig), []byte(s.mac("unsubscribe", id, "")))
}
