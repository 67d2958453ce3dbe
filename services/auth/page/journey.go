package page

import (
	_ "embed"
	"net/http"
)

//go:embed journey.html
var journeyHTML string

// Journey is the data of the pages of the mailed journeys (e-mail verification, password reset): a
// title and a message, at most one form, and links to go on with.
type Journey struct {
	Title  string
	Lead   string // under the title
	Notice string // a status (role=status): "we have sent a message"
	Error  string // an alert (role=alert): an expired link, a throttled request
	// Said is a paragraph already written in the page's language (not translated again): what a
	// recovering reset removed, say.
	Said string
	// Form is the form shown: "forgot" (the address to send a reset link to), "resend" (the address to
	// send a verification link to again), "reset" (the new password), "verify" (confirm the address of a
	// verification link), "notme" (a new-browser mail's "this wasn't me": sign out everywhere), "unblock"
	// (a lockout mail's: let this browser sign in), or "" for none.
	Form   string
	Action string // the form's target (host-relative)
	CSRF   string
	Email  string // the address field's value; on the reset form, the account's (for password managers)
	Token  string // the reset and verify forms' link token
	// Disown offers, on the verify form, to delete the account (made on the sign-up form and never
	// verified) instead of confirming it.
	Disown bool
	// OfferRemoveFactors shows, on the reset form, the choice to remove the account's passkeys and second
	// factor with the old password.
	OfferRemoveFactors bool
	ClientID           string // the application the journey started from, carried through the forms
	Return             string // the sign-in page to go back to (host-relative), carried through the forgot form
	// Fields are the errors of the form's fields (email, new_password).
	Fields map[string]string
	Links  []Link
	Look   Look // set by the renderer
}

// Link is a link on a journey page.
type Link struct{ Href, Text string }

// RenderJourney writes a page of a mailed journey. The forms post to this origin only.
func (r *Renderer) RenderJourney(w http.ResponseWriter, status int, d Journey) {
	if d.Fields == nil {
		d.Fields = map[string]string{}
	}
	d.Look = LookOf(w)
	r.render(w, status, "journey", d, nil)
}
