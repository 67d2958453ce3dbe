package accounts

import (
	"context"
	"fmt"
	"strings"

	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// The notices to an account's owner: what changed on their account, so that a change made by someone
// else (with a stolen session and password) does not go unnoticed.

// passwordChangedMail tells a person their password was changed, so that a change they did not make is
// noticed (ASVS 2.2.3, 2.5.5): when, from which browser, and where to look.
var passwordChangedMail = authmail.Text{
	"en": mail.MustContent("password-changed",
		`Your password for {{.Brand.Product}} was changed`,
		`The password of your account {{.Data.Email}} at {{.Brand.Product}} was changed on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.

Every other browser and app you were signed in to was signed out.{{with .Data.Removed}}

{{.}}{{end}}

If you did this, there is nothing more to do. If you did not, someone knows your password: contact the people who run {{.Brand.Product}} at once.

Your account: {{.Data.AccountURL}}
`,
		`<p>The password of your account <strong>{{.Data.Email}}</strong> at {{.Brand.Product}} was changed on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.</p>
<p>Every other browser and app you were signed in to was signed out.</p>
{{with .Data.Removed}}<p>{{.}}</p>
{{end}}<p>If you did this, there is nothing more to do. If you did not, someone knows your password: contact the people who run {{.Brand.Product}} at once.</p>
{{.Button .Data.AccountURL "Open your account"}}`),
	"de": mail.MustContent("password-changed",
		`Ihr Passwort für {{.Brand.Product}} wurde geändert`,
		`Das Passwort Ihres Kontos {{.Data.Email}} bei {{.Brand.Product}} wurde am {{.Data.When}} geändert{{with .Data.Browser}}, von {{.}} aus{{end}}.

Alle anderen Browser und Apps, in denen Sie angemeldet waren, wurden abgemeldet.{{with .Data.Removed}}

{{.}}{{end}}

Wenn Sie das waren, ist nichts weiter zu tun. Wenn nicht, kennt jemand Ihr Passwort: Wenden Sie sich sofort an die Betreiber von {{.Brand.Product}}.

Ihr Konto: {{.Data.AccountURL}}
`,
		`<p>Das Passwort Ihres Kontos <strong>{{.Data.Email}}</strong> bei {{.Brand.Product}} wurde am {{.Data.When}} geändert{{with .Data.Browser}}, von {{.}} aus{{end}}.</p>
<p>Alle anderen Browser und Apps, in denen Sie angemeldet waren, wurden abgemeldet.</p>
{{with .Data.Removed}}<p>{{.}}</p>
{{end}}<p>Wenn Sie das waren, ist nichts weiter zu tun. Wenn nicht, kennt jemand Ihr Passwort: Wenden Sie sich sofort an die Betreiber von {{.Brand.Product}}.</p>
{{.Button .Data.AccountURL "Ihr Konto öffnen"}}`),
}

type passwordChangedData struct {
	Email, When, Browser, AccountURL, Removed string
}

// RemovedIn says in lang what a reset removed with the password ("" for nothing).
func RemovedIn(lang string, r Removed) string {
	if !r.Any() {
		return ""
	}
	if lang == "de" {
		var what []string
		switch {
		case r.Passkeys == 1:
			what = append(what, "der Passkey")
		case r.Passkeys > 1:
			what = append(what, fmt.Sprintf("die %d Passkeys", r.Passkeys))
		}
		if r.SecondFactor {
			what = append(what, "die Anmeldung in zwei Schritten (Authenticator-App und Wiederherstellungscodes)")
		}
		return "Außerdem wurden " + strings.Join(what, " und ") + " des Kontos entfernt. Richten Sie auf Ihrer Kontoseite Ihre eigenen wieder ein."
	}
	var what []string
	if r.Passkeys > 0 {
		what = append(what, "its "+authmail.Plural(r.Passkeys, "passkey"))
	}
	if r.SecondFactor {
		what = append(what, "its two-step sign-in (the authenticator app and the recovery codes)")
	}
	return "The account's other ways to sign in were removed too: " + strings.Join(what, " and ") + ". Add your own again on your account page."
}

// PasswordChanged mails the notice, in lang (the language of the request that changed the password),
// naming the browser of the user agent ua, through the platform's mail component; a configuration
// without a mail relay sends none (and that is not an error: the operator chose no mail).
// removed is what went with the old password (a reset that recovered the account), told in the mail.
func (o *Ops) PasswordChanged(ctx context.Context, u *users.User, lang, ua string, removed Removed) error {
	a := o.auth()
	m, err := passwordChangedMail.Render(lang, authmail.Brand(a, authmail.ProductName(a)), passwordChangedData{
		Email: u.Email, When: authmail.WhenIn(lang, o.now()), Browser: authmail.BrowserIn(lang, ua), AccountURL: o.issuer() + "/account",
		Removed: RemovedIn(lang, removed),
	})
	if err != nil {
		return err
	}
	m.To = []string{u.Email}
	return o.mail.Send(ctx, m)
}

// secondFactorMail tells a person their second factor changed: set up, turned off, new recovery codes,
// or a recovery code spent at a sign-in (ASVS 2.5.5, 2.8.5). Whoever holds a stolen session and
// password could otherwise turn the factor off, or spend the codes, without the person noticing.
var secondFactorMail = authmail.Text{
	"en": mail.MustContent("second-factor-changed",
		`{{.Data.Subject}} at {{.Brand.Product}}`,
		`{{.Data.What}} on your account {{.Data.Email}} at {{.Brand.Product}}, on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.{{with .Data.Left}}
{{.}}{{end}}

If you did this, there is nothing more to do. If you did not, someone knows your password: change it and look at your account at once.

Your account: {{.Data.AccountURL}}
`,
		`<p>{{.Data.What}} on your account <strong>{{.Data.Email}}</strong> at {{.Brand.Product}}, on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.</p>{{with .Data.Left}}
<p>{{.}}</p>{{end}}
<p>If you did this, there is nothing more to do. If you did not, someone knows your password: change it and look at your account at once.</p>
{{.Button .Data.AccountURL "Open your account"}}`),
	"de": mail.MustContent("second-factor-changed",
		`{{.Data.Subject}} bei {{.Brand.Product}}`,
		`{{.Data.What}}: Ihr Konto {{.Data.Email}} bei {{.Brand.Product}}, am {{.Data.When}}{{with .Data.Browser}}, von {{.}} aus{{end}}.{{with .Data.Left}}
{{.}}{{end}}

Wenn Sie das waren, ist nichts weiter zu tun. Wenn nicht, kennt jemand Ihr Passwort: Ändern Sie es und sehen Sie sofort in Ihr Konto.

Ihr Konto: {{.Data.AccountURL}}
`,
		`<p>{{.Data.What}}: Ihr Konto <strong>{{.Data.Email}}</strong> bei {{.Brand.Product}}, am {{.Data.When}}{{with .Data.Browser}}, von {{.}} aus{{end}}.</p>{{with .Data.Left}}
<p>{{.}}</p>{{end}}
<p>Wenn Sie das waren, ist nichts weiter zu tun. Wenn nicht, kennt jemand Ihr Passwort: Ändern Sie es und sehen Sie sofort in Ihr Konto.</p>
{{.Button .Data.AccountURL "Ihr Konto öffnen"}}`),
}

// SecondFactorChange is a second-factor change, as the mail names it, in each language.
type SecondFactorChange map[string]struct{ Subject, What string }

var (
	FactorOn = SecondFactorChange{
		"en": {"Two-step sign-in was turned on", "Two-step sign-in (an authenticator app) was turned on"},
		"de": {"Zweistufige Anmeldung wurde eingeschaltet", "Die zweistufige Anmeldung (mit einer Authenticator-App) wurde eingeschaltet"},
	}
	FactorOff = SecondFactorChange{
		"en": {"Two-step sign-in was turned off", "Two-step sign-in was turned off"},
		"de": {"Zweistufige Anmeldung wurde ausgeschaltet", "Die zweistufige Anmeldung wurde ausgeschaltet"},
	}
	FactorCodes = SecondFactorChange{
		"en": {"New recovery codes were made", "New recovery codes were made (the earlier ones no longer work)"},
		"de": {"Neue Wiederherstellungscodes wurden erstellt", "Neue Wiederherstellungscodes wurden erstellt (die bisherigen gelten nicht mehr)"},
	}
	FactorCodeUsed = SecondFactorChange{
		"en": {"A recovery code was used", "A recovery code was used to sign in"},
		"de": {"Ein Wiederherstellungscode wurde verwendet", "Ein Wiederherstellungscode wurde zur Anmeldung verwendet"},
	}
)

type secondFactorData struct {
	Subject, What, Email, When, Browser, Left, AccountURL string
}

// codesLeft says how many recovery codes remain, in lang ("" when not known or not relevant: left < 0).
func codesLeft(lang string, left int) string {
	switch {
	case left < 0:
		return ""
	case left == 0 && lang == "de":
		return "Sie haben keine Wiederherstellungscodes mehr: Erstellen Sie auf Ihrer Kontoseite neue."
	case left == 0:
		return "You have no recovery codes left: make new ones on your account page."
	case lang == "de" && left == 1:
		return "Sie haben noch 1 Wiederherstellungscode."
	case lang == "de":
		return fmt.Sprintf("Sie haben noch %d Wiederherstellungscodes.", left)
	}
	return fmt.Sprintf("You have %s left.", authmail.Plural(left, "recovery code"))
}

// SecondFactorChanged sends the notice, in lang (the request's language) naming the browser of ua,
// after the answer (the person is looking at the page that shows the change; a slow relay must not hold
// it). left is how many recovery codes remain, or -1 when not known or not relevant. A failure is logged.
func (o *Ops) SecondFactorChanged(ctx context.Context, u *users.User, change SecondFactorChange, lang, ua string, left int) {
	words, ok := change[lang]
	if !ok {
		lang, words = "en", change["en"]
	}
	a := o.auth()
	d := secondFactorData{Subject: words.Subject, What: words.What, Email: u.Email, When: authmail.WhenIn(lang, o.now()),
		Browser: authmail.BrowserIn(lang, ua), Left: codesLeft(lang, left), AccountURL: o.issuer() + "/account"}
	authmail.SendLater(ctx, o.log, "second factor ("+change["en"].Subject+")", func(ctx context.Context) error {
		m, err := secondFactorMail.Render(lang, authmail.Brand(a, authmail.ProductName(a)), d)
		if err != nil {
			return err
		}
		m.To = []string{u.Email}
		return o.mail.Send(ctx, m)
	})
}

// The passkey mail: sent to the person whenever a passkey is added to their account, so that a passkey
// added by someone else (with a stolen session and password) does not go unnoticed. Its words are all
// ours and what the provider saw itself (when, from which browser); the passkey's name is not in it:
// the adder chose it, and in a mail meant for the case where the adder is not the owner, a name such as
// "Ignore this, your account is safe" or a link would speak with the mail's voice (D69). The passkeys
// page, where the name is shown, says the day each passkey was added.
var passkeyAddedMail = authmail.Text{
	"en": mail.MustContent("passkey-added",
		`A passkey was added to your {{.Brand.Product}} account`,
		`A passkey was added to your account ({{.Data.Email}}) on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}. It can sign you in from now on, without your password.

If you did not add it, remove it now (your passkeys page shows the day each one was added) and change your password:
{{.Data.Link}}`,
		`<p>A passkey was added to your account ({{.Data.Email}}) on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}. It can sign you in from now on, without your password.</p>
<p>If you did not add it, remove it now (your passkeys page shows the day each one was added) and change your password.</p>
{{.Button .Data.Link "Review your passkeys"}}`),
	"de": mail.MustContent("passkey-added",
		`Ihrem Konto bei {{.Brand.Product}} wurde ein Passkey hinzugefügt`,
		`Ihrem Konto ({{.Data.Email}}) wurde am {{.Data.When}}{{with .Data.Browser}} von {{.}} aus{{end}} ein Passkey hinzugefügt. Mit ihm können Sie sich ab jetzt ohne Passwort anmelden.

Wenn Sie ihn nicht hinzugefügt haben, entfernen Sie ihn sofort (Ihre Passkey-Seite zeigt, an welchem Tag jeder hinzugefügt wurde) und ändern Sie Ihr Passwort:
{{.Data.Link}}`,
		`<p>Ihrem Konto ({{.Data.Email}}) wurde am {{.Data.When}}{{with .Data.Browser}} von {{.}} aus{{end}} ein Passkey hinzugefügt. Mit ihm können Sie sich ab jetzt ohne Passwort anmelden.</p>
<p>Wenn Sie ihn nicht hinzugefügt haben, entfernen Sie ihn sofort (Ihre Passkey-Seite zeigt, an welchem Tag jeder hinzugefügt wurde) und ändern Sie Ihr Passwort.</p>
{{.Button .Data.Link "Ihre Passkeys ansehen"}}`),
}

type passkeyMailData struct {
	Email, When, Browser, Link string
}

// PasskeyAdded tells the person in lang that the passkey p was added from the browser of ua (product:
// the relying party's name). A mail that cannot be sent is logged; the passkey stays (the person is
// looking at the page that lists it).
func (o *Ops) PasskeyAdded(ctx context.Context, u *users.User, p *passkey.Passkey, product, lang, ua string) {
	m, err := passkeyAddedMail.Render(lang, authmail.Brand(o.auth(), product), passkeyMailData{
		Email: u.Email, When: authmail.WhenIn(lang, p.Created), Browser: authmail.BrowserIn(lang, ua), Link: o.issuer() + "/account/passkeys"})
	if err == nil {
		m.To, m.ID = []string{u.Email}, "passkey-added."+p.ID
		err = o.mail.Send(ctx, m)
	}
	if err != nil {
		o.log.Warn("the passkey-added mail could not be sent", "user", u.ID, "err", err)
	}
}
