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

// Paths of the double opt-in's pages: the waitlist's, and a declared form's (with its id for :form).
const (
	ConfirmPath         = "/waitlist/confirm"
	UnsubscribePath     = "/waitlist/unsubscribe"
	FormConfirmPath     = "/f/:form/confirm"
	FormUnsubscribePath = "/f/:form/unsubscribe"
)

// scope is whose links a signer makes: the waitlist's (form "") or a declared form's. A form's MACs
// cover its id ("confirm:<form>"; an id has no colon), so a link of one form does nothing at another.
type scope struct{ form string }

func (sc scope) purpose(action string) string {
	if sc.form == "" {
		return action // the waitlist's, as since its first links
	}
	return action + ":" + sc.form
}

func (sc scope) path(action string) string {
	if sc.form == "" {
		return "/waitlist/" + action
	}
	return "/f/" + sc.form + "/" + action
}

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

// confirmURL is base + the scope's confirm path?e=<id>&x=<unix expiry>&s=<mac>.
func (s signer) confirmURL(sc scope, base, id string, until time.Time) string {
	exp := strconv.FormatInt(until.Unix(), 10)
	return base + sc.path("confirm") + "?" + url.Values{"e": {id}, "x": {exp}, "s": {s.mac(sc.purpose("confirm"), id, exp)}}.Encode()
}

// unsubscribeURL is base + the scope's unsubscribe path?e=<id>&s=<mac>.
func (s signer) unsubscribeURL(sc scope, base, id string) string {
	return base + sc.path("unsubscribe") + "?" + url.Values{"e": {id}, "s": {s.mac(sc.purpose("unsubscribe"), id, "")}}.Encode()
}

// linkState is what a link's parameters say.
type linkState int

const (
	linkForged  linkState = iota // not signed by the key (or not a link at all)
	linkExpired                  // signed, past its time
	linkGood
)

// checkConfirm checks a confirmation link's parameters at now.
func (s signer) checkConfirm(sc scope, id, exp, sig string, now time.Time) linkState {
	if id == "" || len(id) > 64 || !hmac.Equal([]byte(sig), []byte(s.mac(sc.purpose("confirm"), id, exp))) {
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
func (s signer) checkUnsubscribe(sc scope, id, sig string) bool {
	return id != "" && len(id) <= 64 && hmac.Equal([]byte(sig), []byte(s.mac(sc.purpose("unsubscribe"), id, "")))
}
