package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/realm"
)

// The browser cookies of the provider; under https the __Host- prefix pins each to this exact host and
// path /.
const (
	SessionCookie = "fs_session" // the sign-in session (package signon)
	CSRFCookie    = "fs_csrf"    // the double-submit CSRF token
	DeviceCookie  = "fs_device"  // a browser that signed in to an account before (package device, D19)
	MFACookie     = "fs_mfa"     // the second step's challenge (package mfa)
)

// CookieName is base as the browser stores it for the realm.
func CookieName(rt *realm.Realm, base string) string {
	if rt.Secure {
		return "__Host-" + base
	}
	return base
}

// SetCookie sets an HttpOnly, SameSite=Lax cookie; maxAge < 0 deletes it, 0 makes it a session cookie.
func SetCookie(w http.ResponseWriter, rt *realm.Realm, base, value string, maxAge time.Duration) {
	c := &http.Cookie{
		Name:     CookieName(rt, base),
		Value:    value,
		Path:     "/",
		HttpOnly: true,
		Secure:   rt.Secure,
		SameSite: http.SameSiteLaxMode,
	}
	if maxAge < 0 {
		c.MaxAge = -1
	} else if maxAge > 0 {
		c.MaxAge = int(maxAge / time.Second)
	}
	http.SetCookie(w, c)
}

// ReadCookie is the value of the cookie base, or "".
func ReadCookie(r *http.Request, rt *realm.Realm, base string) string {
	c, err := r.Cookie(CookieName(rt, base))
	if err != nil {
		return ""
	}
	return c.Value
}

// RandomToken is 256 random bits, base64url.
func RandomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// CSRFToken returns the browser's CSRF token (double-submit: the same random value in an HttpOnly
// cookie and in the form), setting a new cookie when there is none.
func CSRFToken(w http.ResponseWriter, r *http.Request, rt *realm.Realm) string {
	if v := ReadCookie(r, rt, CSRFCookie); len(v) == 43 {
		return v
	}
	v := RandomToken()
	SetCookie(w, rt, CSRFCookie, v, 0)
	return v
}

// CSRFValid checks the double-submit token and, when the browser sends Origin, that the form was posted
// from this host ("null", what a sandboxed or opaque-origin page sends, is refused). A cross-site page
// can neither read the cookie nor set it.
func CSRFValid(r *http.Request, rt *realm.Realm) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	cookie := ReadCookie(r, rt, CSRFCookie)
	form := r.PostForm.Get("csrf_token")
	return len(cookie) == 43 && subtle.ConstantTimeCompare([]byte(cookie), []byte(form)) == 1
}
