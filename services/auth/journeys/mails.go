package journeys

import (
	"context"

	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// The mails of the mailed journeys: the reset link's (reset.go; the verification link's is package
// accounts'), and what a sign-up leads to (signup.go). Each says what it is for, how long its link
// works, and what to do when it was not asked for.

// resetMail is the password reset link's mail, sent through accounts.Ops.SendLinkMail.
var resetMail = authmail.Text{
	"en": mail.MustContent("password-reset",
		`Reset your password for {{.Data.App}}`,
		`Someone, probably you, asked to reset the password of the account {{.Data.Email}} at {{.Data.App}}. Choose a new password here:

{{.Data.Link}}

The link works once, for {{.Data.Valid}}. If you did not ask for it, ignore this message: your password stays as it is.`,
		`<p>Someone, probably you, asked to reset the password of the account <strong>{{.Data.Email}}</strong> at <strong>{{.Data.App}}</strong>.</p>
{{.Button .Data.Link "Choose a new password"}}
<p>The link works once, for {{.Data.Valid}}. If you did not ask for it, ignore this message: your password stays as it is.</p>`),
	"de": mail.MustContent("password-reset",
		`Setzen Sie Ihr Passwort für {{.Data.App}} zurück`,
		`Jemand, vermutlich Sie, möchte das Passwort des Kontos {{.Data.Email}} bei {{.Data.App}} zurücksetzen. Wählen Sie hier ein neues Passwort:

{{.Data.Link}}

Der Link ist {{.Data.Valid}} gültig und funktioniert nur einmal. Wenn Sie ihn nicht angefordert haben, ignorieren Sie diese Nachricht: Ihr Passwort bleibt, wie es ist.`,
		`<p>Jemand, vermutlich Sie, möchte das Passwort des Kontos <strong>{{.Data.Email}}</strong> bei <strong>{{.Data.App}}</strong> zurücksetzen.</p>
{{.Button .Data.Link "Neues Passwort wählen"}}
<p>Der Link ist {{.Data.Valid}} gültig und funktioniert nur einmal. Wenn Sie ihn nicht angefordert haben, ignorieren Sie diese Nachricht: Ihr Passwort bleibt, wie es ist.</p>`),
}

// SignupMail sends what a sign-up leads to. The sign-up page answers a new address and a taken one
// alike (no enumeration); the difference goes to the address's owner by mail. It is called after the
// answer is decided and cannot change it (a failure is logged). Created's mail carries the link that
// verifies the address (accounts.Ops.VerificationLink).
type SignupMail interface {
	// Created is told of a new account.
	Created(ctx context.Context, n SignupNotice) error
	// Taken is told of a sign-up for an address that already has an account (someone, perhaps its
	// owner who forgot, tried to create a second one).
	Taken(ctx context.Context, n SignupNotice) error
}

// SignupNotice is what a sign-up mail is about.
type SignupNotice struct {
	User *users.User
	// App is the name of the application the person was signing up for (the client's name).
	App string
	// Continue is where to go on: the application's address (the origin of the request's redirect
	// URI), never the authorization request itself (it holds the app's state and PKCE challenge).
	Continue string
	// Verify is the link that verifies the address (Created only; "" when it could not be issued).
	Verify string
	// Valid is how long Verify works, in words (in Lang).
	Valid string
	// Lang is the language of the sign-up page, and so of the mail ("en" when empty).
	Lang string
	// Brand is the mail's look: the platform's accent colour and logo, as the other mails of auth carry
	// (its Product is App when empty).
	Brand mail.Brand
}

// mailSignup sends the sign-up mails through the platform's mail component.
type mailSignup struct{ sender mail.Sender }

var (
	signupCreatedMail = authmail.Text{
		"en": mail.MustContent("signup-created",
			`Your {{.Data.App}} account`,
			`Your account for {{.Data.App}} was created with this address.
{{with .Data.Verify}}
Confirm that the address is yours by opening this link (it works once, for {{$.Data.Valid}}):

{{.}}
{{end}}
Sign in with it at {{.Data.Continue}}

If you did not create it, you can ignore this message: nobody can sign in without the password that was chosen.`,
			`<p>Your account for <strong>{{.Data.App}}</strong> was created with this address.</p>
{{if .Data.Verify}}<p>Confirm that the address is yours (the link works once, for {{.Data.Valid}}):</p>
{{.Button .Data.Verify "Confirm my address"}}
<p>Then sign in at <a href="{{.Data.Continue}}">{{.Data.Continue}}</a>.</p>{{else}}{{.Button .Data.Continue "Go to the application"}}{{end}}
<p>If you did not create it, you can ignore this message: nobody can sign in without the password that was chosen.</p>`),
		"de": mail.MustContent("signup-created",
			`Ihr Konto bei {{.Data.App}}`,
			`Ihr Konto für {{.Data.App}} wurde mit dieser Adresse erstellt.
{{with .Data.Verify}}
Bestätigen Sie mit diesem Link, dass die Adresse Ihnen gehört (er ist {{$.Data.Valid}} gültig und funktioniert nur einmal):

{{.}}
{{end}}
Melden Sie sich damit hier an: {{.Data.Continue}}

Wenn Sie es nicht erstellt haben, können Sie diese Nachricht ignorieren: Ohne das gewählte Passwort kann sich niemand anmelden.`,
			`<p>Ihr Konto für <strong>{{.Data.App}}</strong> wurde mit dieser Adresse erstellt.</p>
{{if .Data.Verify}}<p>Bestätigen Sie, dass die Adresse Ihnen gehört (der Link ist {{.Data.Valid}} gültig und funktioniert nur einmal):</p>
{{.Button .Data.Verify "Adresse bestätigen"}}
<p>Melden Sie sich dann hier an: <a href="{{.Data.Continue}}">{{.Data.Continue}}</a>.</p>{{else}}{{.Button .Data.Continue "Zur Anwendung"}}{{end}}
<p>Wenn Sie es nicht erstellt haben, können Sie diese Nachricht ignorieren: Ohne das gewählte Passwort kann sich niemand anmelden.</p>`),
	}
	signupTakenMail = authmail.Text{
		"en": mail.MustContent("signup-taken",
			`Someone tried to create a {{.Data.App}} account with your address`,
			`Someone, perhaps you, tried to create an account for {{.Data.App}} with this address. You already have one, so nothing was created.

Sign in with your existing account at {{.Data.Continue}}

If it was not you, you can ignore this message: your account is unchanged.`,
			`<p>Someone, perhaps you, tried to create an account for <strong>{{.Data.App}}</strong> with this address. You already have one, so nothing was created.</p>
{{.Button .Data.Continue "Sign in with your account"}}
<p>If it was not you, you can ignore this message: your account is unchanged.</p>`),
		"de": mail.MustContent("signup-taken",
			`Jemand wollte mit Ihrer Adresse ein Konto bei {{.Data.App}} erstellen`,
			`Jemand, vielleicht Sie, wollte mit dieser Adresse ein Konto für {{.Data.App}} erstellen. Sie haben bereits eines, daher wurde nichts erstellt.

Melden Sie sich mit Ihrem bestehenden Konto hier an: {{.Data.Continue}}

Wenn Sie es nicht waren, können Sie diese Nachricht ignorieren: Ihr Konto ist unverändert.`,
			`<p>Jemand, vielleicht Sie, wollte mit dieser Adresse ein Konto für <strong>{{.Data.App}}</strong> erstellen. Sie haben bereits eines, daher wurde nichts erstellt.</p>
{{.Button .Data.Continue "Mit Ihrem Konto anmelden"}}
<p>Wenn Sie es nicht waren, können Sie diese Nachricht ignorieren: Ihr Konto ist unverändert.</p>`),
	}
)

func (m mailSignup) Created(ctx context.Context, n SignupNotice) error {
	return m.send(ctx, signupCreatedMail, n)
}

func (m mailSignup) Taken(ctx context.Context, n SignupNotice) error {
	return m.send(ctx, signupTakenMail, n)
}

func (m mailSignup) send(ctx context.Context, c authmail.Text, n SignupNotice) error {
	brand := n.Brand
	if brand.Product == "" {
		brand.Product = n.App
	}
	msg, err := c.Render(n.Lang, brand, n)
	if err != nil {
		return err
	}
	msg.To = []string{n.User.Email}
	return m.sender.Send(ctx, msg)
}
