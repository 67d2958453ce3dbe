package auth

import (
	"context"
	"fmt"
	"net/http"

	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// passwordChangedMail tells a person their password was changed, so that a change they did not make is
// noticed (ASVS 2.2.3, 2.5.5): when, from which browser, and where to look.
var passwordChangedMail = mailText{
	"en": mail.MustContent("password-changed",
		`Your password for {{.Brand.Product}} was changed`,
		`The password of your account {{.Data.Email}} at {{.Brand.Product}} was changed on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.

Every other browser and app you were signed in to was signed out.

If you did this, there is nothing more to do. If you did not, someone knows your password: contact the people who run {{.Brand.Product}} at once.

Your account: {{.Data.AccountURL}}
`,
		`<p>The password of your account <strong>{{.Data.Email}}</strong> at {{.Brand.Product}} was changed on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.</p>
<p>Every other browser and app you were signed in to was signed out.</p>
<p>If you did this, there is nothing more to do. If you did not, someone knows your password: contact the people who run {{.Brand.Product}} at once.</p>
{{.Button .Data.AccountURL "Open your account"}}`),
	"de": mail.MustContent("password-changed",
		`Ihr Passwort für {{.Brand.Product}} wurde geändert`,
		`Das Passwort Ihres Kontos {{.Data.Email}} bei {{.Brand.Product}} wurde am {{.Data.When}} geändert{{with .Data.Browser}}, von {{.}} aus{{end}}.

Alle anderen Browser und Apps, in denen Sie angemeldet waren, wurden abgemeldet.

Wenn Sie das waren, ist nichts weiter zu tun. Wenn nicht, kennt jemand Ihr Passwort: Wenden Sie sich sofort an die Betreiber von {{.Brand.Product}}.

Ihr Konto: {{.Data.AccountURL}}
`,
		`<p>Das Passwort Ihres Kontos <strong>{{.Data.Email}}</strong> bei {{.Brand.Product}} wurde am {{.Data.When}} geändert{{with .Data.Browser}}, von {{.}} aus{{end}}.</p>
<p>Alle anderen Browser und Apps, in denen Sie angemeldet waren, wurden abgemeldet.</p>
<p>Wenn Sie das waren, ist nichts weiter zu tun. Wenn nicht, kennt jemand Ihr Passwort: Wenden Sie sich sofort an die Betreiber von {{.Brand.Product}}.</p>
{{.Button .Data.AccountURL "Ihr Konto öffnen"}}`),
}

type passwordChangedData struct {
	Email, When, Browser, AccountURL string
}

// sendPasswordChanged mails the notice, in the language of the request that changed the password,
// through the platform's mail component; a configuration without a mail relay sends none (and that is
// not an error: the operator chose no mail).
func (s *Service) sendPasswordChanged(ctx context.Context, rt *runtime, u *users.User, r *http.Request) error {
	lang := requestLang(r)
	m, err := passwordChangedMail.render(lang, mailBrand(rt, productName(rt)), passwordChangedData{
		Email: u.Email, When: whenIn(lang, s.now()), Browser: browserIn(lang, r.UserAgent()), AccountURL: rt.issuer + "/account",
	})
	if err != nil {
		return err
	}
	m.To = []string{u.Email}
	return s.sendMail(ctx, m)
}

// secondFactorMail tells a person their second factor changed: set up, turned off, new recovery codes,
// or a recovery code spent at a sign-in (ASVS 2.5.5, 2.8.5). Whoever holds a stolen session and
// password could otherwise turn the factor off, or spend the codes, without the person noticing.
var secondFactorMail = mailText{
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

// A second-factor change, as the mail names it, in each language.
type secondFactorChange map[string]struct{ Subject, What string }

var (
	factorOn = secondFactorChange{
		"en": {"Two-step sign-in was turned on", "Two-step sign-in (an authenticator app) was turned on"},
		"de": {"Zweistufige Anmeldung wurde eingeschaltet", "Die zweistufige Anmeldung (mit einer Authenticator-App) wurde eingeschaltet"},
	}
	factorOff = secondFactorChange{
		"en": {"Two-step sign-in was turned off", "Two-step sign-in was turned off"},
		"de": {"Zweistufige Anmeldung wurde ausgeschaltet", "Die zweistufige Anmeldung wurde ausgeschaltet"},
	}
	factorCodes = secondFactorChange{
		"en": {"New recovery codes were made", "New recovery codes were made (the earlier ones no longer work)"},
		"de": {"Neue Wiederherstellungscodes wurden erstellt", "Neue Wiederherstellungscodes wurden erstellt (die bisherigen gelten nicht mehr)"},
	}
	factorCodeUsed = secondFactorChange{
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
	return fmt.Sprintf("You have %s left.", plural(left, "recovery code"))
}

// mailSecondFactor sends the notice, in the request's language, after the answer (the person is
// looking at the page that shows the change; a slow relay must not hold it). left is how many recovery
// codes remain, or -1 when not known or not relevant. A failure is logged.
func (s *Service) mailSecondFactor(ctx context.Context, rt *runtime, u *users.User, change secondFactorChange, r *http.Request, left int) {
	lang := requestLang(r)
	words, ok := change[lang]
	if !ok {
		lang, words = "en", change["en"]
	}
	d := secondFactorData{Subject: words.Subject, What: words.What, Email: u.Email, When: whenIn(lang, s.now()),
		Browser: browserIn(lang, r.UserAgent()), Left: codesLeft(lang, left), AccountURL: rt.issuer + "/account"}
	s.sendLater(ctx, "second factor ("+change["en"].Subject+")", func(ctx context.Context) error {
		m, err := secondFactorMail.render(lang, mailBrand(rt, productName(rt)), d)
		if err != nil {
			return err
		}
		m.To = []string{u.Email}
		return s.sendMail(ctx, m)
	})
}
