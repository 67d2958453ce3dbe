package page

import (
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"html/template"
	"net/http"
	"time"
)

// The passkey parts of the pages: the sign-in page's "Sign in with a passkey" (and the browser's autofill
// of passkeys), and the page that lists, adds and removes a person's passkeys. Both need the one script
// passkey.js, allowed by a nonce new for every response; without it the passkey forms stay hidden and
// the rest of the page works as before.

//go:embed passkey.js
var passkeyJS string

var passkeyFuncs = template.FuncMap{
	"passkeyScript": func() template.JS { return template.JS(passkeyJS) },
	"date":          func(t time.Time) string { return t.UTC().Format("2 Jan 2006, 15:04 UTC") },
	"isodate":       func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
}

// PasskeySignIn offers signing in with a passkey on the sign-in page.
type PasskeySignIn struct {
	// BeginURL is where the script asks for a sign-in ceremony's options (POST with the CSRF token).
	BeginURL string
	// Error says why a passkey sign-in was refused, next to the passkey button.
	Error string
}

// Passkeys is the data of the page of a person's passkeys.
type Passkeys struct {
	// Action is where the page's forms post (add, remove); BeginURL where the script asks for a
	// registration ceremony's options.
	Action string
	// AccountURL is the account page, linked back to.
	AccountURL string
	BeginURL   string
	CSRF       string
	Email      string
	List       []PasskeyRow
	// Notice confirms what the last action did; Error says why it failed.
	Notice string
	Error  string
	// Full: the account has the most passkeys it may have, so the form to add one is not shown.
	Full bool
	// VerifyFirst: the address is not verified, so the form to add one is not shown.
	VerifyFirst *VerifyFirst
	Look        Look // set by the renderer
}

// PasskeyRow is one passkey in the list.
type PasskeyRow struct {
	ID       string
	Name     string
	Created  time.Time
	LastUsed time.Time
	Synced   bool
	// ClonedAt is when an assertion with a counter that did not go up was last refused.
	ClonedAt time.Time
}

// signInPage and passkeysPage are a page's data with the nonce of its script ("": no script).
type signInPage struct {
	SignIn
	Nonce string
}

type passkeysPage struct {
	Passkeys
	Nonce string
}

// newNonce is a CSP nonce: 128 random bits (CSP 3 asks for at least 128).
func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b) // CSP allows - and _; no + to escape in HTML
}

// RenderPasskeys writes the page of a person's passkeys.
func (r *Renderer) RenderPasskeys(w http.ResponseWriter, status int, d Passkeys) {
	nonce := newNonce()
	d.Look = LookOf(w)
	r.renderScripted(w, status, "passkeys", passkeysPage{d, nonce}, nil, nonce)
}
