package notify

import (
	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// The notices' texts, in each language the pages speak. They say when and from which browser (a name
// from a fixed list, authmail.BrowserName: nothing the sender chose), and carry one link; never a
// password, a code or the client's address.

type mailData struct {
	Email, When, Browser, Link, Valid string
	Until, Which                      string // the lockout's
}

// newBrowserMail: a sign-in from a browser never seen for the account (ASVS 2.2.3, 2.5.5).
var newBrowserMail = authmail.Text{
	"en": mail.MustContent("new-browser",
		`New sign-in to your {{.Brand.Product}} account`,
		`Your account {{.Data.Email}} at {{.Brand.Product}} was signed in to on {{.Data.When}} from a browser it had not been used with before{{with .Data.Browser}}: {{.}}{{end}}.

If this was you, there is nothing to do.

If it was not you, someone knows your password or another way in. Sign every browser and app out of your account and get a link to choose a new password here (the link works once, for {{.Data.Valid}}):

{{.Data.Link}}
`,
		`<p>Your account <strong>{{.Data.Email}}</strong> at {{.Brand.Product}} was signed in to on {{.Data.When}} from a browser it had not been used with before{{with .Data.Browser}}: {{.}}{{end}}.</p>
<p>If this was you, there is nothing to do.</p>
<p>If it was not you, someone knows your password or another way in. Sign every browser and app out of your account and get a link to choose a new password (the link works once, for {{.Data.Valid}}):</p>
{{.Button .Data.Link "This wasn't me"}}`),
	"de": mail.MustContent("new-browser",
		`Neue Anmeldung bei Ihrem Konto bei {{.Brand.Product}}`,
		`Bei Ihrem Konto {{.Data.Email}} bei {{.Brand.Product}} hat sich am {{.Data.When}} jemand mit einem Browser angemeldet, der dafür noch nie verwendet wurde{{with .Data.Browser}}: {{.}}{{end}}.

Wenn Sie das waren, ist nichts zu tun.

Wenn nicht, kennt jemand Ihr Passwort oder einen anderen Zugang. Melden Sie hier alle Browser und Apps von Ihrem Konto ab und erhalten Sie einen Link, mit dem Sie ein neues Passwort wählen (der Link ist {{.Data.Valid}} gültig und funktioniert nur einmal):

{{.Data.Link}}
`,
		`<p>Bei Ihrem Konto <strong>{{.Data.Email}}</strong> bei {{.Brand.Product}} hat sich am {{.Data.When}} jemand mit einem Browser angemeldet, der dafür noch nie verwendet wurde{{with .Data.Browser}}: {{.}}{{end}}.</p>
<p>Wenn Sie das waren, ist nichts zu tun.</p>
<p>Wenn nicht, kennt jemand Ihr Passwort oder einen anderen Zugang. Melden Sie alle Browser und Apps von Ihrem Konto ab und erhalten Sie einen Link, mit dem Sie ein neues Passwort wählen (der Link ist {{.Data.Valid}} gültig und funktioniert nur einmal):</p>
{{.Button .Data.Link "Das war ich nicht"}}`),
}

// lockoutMail: failed sign-ins used up a budget of the account (ASVS 2.2.1, 2.2.3).
var lockoutMail = authmail.Text{
	"en": mail.MustContent("lockout",
		`Signing in to your {{.Brand.Product}} account was paused`,
		`After too many wrong passwords for your account {{.Data.Email}} at {{.Brand.Product}}, signing in from {{.Data.Which}} is paused until {{.Data.Until}}. The last attempt was on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.

If it was you: open this link in the browser you want to sign in with. It lets that browser sign in again, on a budget of its own (the link works once, for {{.Data.Valid}}):

{{.Data.Link}}

If it was not you: someone is trying to guess your password. Browsers you signed in with before can still sign in, and nobody gets further from this mail. A strong password, or a passkey or two-step sign-in on your account page, makes guessing useless.
`,
		`<p>After too many wrong passwords for your account <strong>{{.Data.Email}}</strong> at {{.Brand.Product}}, signing in from {{.Data.Which}} is paused until {{.Data.Until}}. The last attempt was on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.</p>
<p>If it was you: open this link in the browser you want to sign in with. It lets that browser sign in again, on a budget of its own (the link works once, for {{.Data.Valid}}):</p>
{{.Button .Data.Link "Let my browser sign in"}}
<p>If it was not you: someone is trying to guess your password. Browsers you signed in with before can still sign in, and nobody gets further from this mail. A strong password, or a passkey or two-step sign-in on your account page, makes guessing useless.</p>`),
	"de": mail.MustContent("lockout",
		`Die Anmeldung bei Ihrem Konto bei {{.Brand.Product}} wurde pausiert`,
		`Nach zu vielen falschen Passwörtern für Ihr Konto {{.Data.Email}} bei {{.Brand.Product}} ist die Anmeldung von {{.Data.Which}} bis {{.Data.Until}} pausiert. Der letzte Versuch war am {{.Data.When}}{{with .Data.Browser}}, von {{.}} aus{{end}}.

Wenn Sie das waren: Öffnen Sie diesen Link in dem Browser, mit dem Sie sich anmelden möchten. Dieser Browser kann sich dann wieder anmelden, mit eigenen Versuchen (der Link ist {{.Data.Valid}} gültig und funktioniert nur einmal):

{{.Data.Link}}

Wenn nicht: Jemand versucht, Ihr Passwort zu erraten. Browser, mit denen Sie sich schon angemeldet haben, können sich weiter anmelden, und mit dieser Mail kommt niemand weiter. Ein starkes Passwort, oder ein Passkey oder die zweistufige Anmeldung auf Ihrer Kontoseite, macht das Raten nutzlos.
`,
		`<p>Nach zu vielen falschen Passwörtern für Ihr Konto <strong>{{.Data.Email}}</strong> bei {{.Brand.Product}} ist die Anmeldung von {{.Data.Which}} bis {{.Data.Until}} pausiert. Der letzte Versuch war am {{.Data.When}}{{with .Data.Browser}}, von {{.}} aus{{end}}.</p>
<p>Wenn Sie das waren: Öffnen Sie diesen Link in dem Browser, mit dem Sie sich anmelden möchten. Dieser Browser kann sich dann wieder anmelden, mit eigenen Versuchen (der Link ist {{.Data.Valid}} gültig und funktioniert nur einmal):</p>
{{.Button .Data.Link "Meinen Browser anmelden lassen"}}
<p>Wenn nicht: Jemand versucht, Ihr Passwort zu erraten. Browser, mit denen Sie sich schon angemeldet haben, können sich weiter anmelden, und mit dieser Mail kommt niemand weiter. Ein starkes Passwort, oder ein Passkey oder die zweistufige Anmeldung auf Ihrer Kontoseite, macht das Raten nutzlos.</p>`),
}

// pausedFor names the browsers a lockout pauses, in lang: every browser not seen for the account
// ("new"), or the one known browser that used up its own budget ("this").
func pausedFor(lang, which string) string {
	switch {
	case lang == "de" && which == "new":
		return "Browsern aus, mit denen Sie sich noch nie angemeldet haben,"
	case lang == "de":
		return "dem Browser aus, der es versucht hat,"
	case which == "new":
		return "browsers you never signed in with"
	}
	return "the browser that tried"
}
