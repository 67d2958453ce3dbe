package auth

import (
	"context"
	"fmt"

	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// passwordChangedMail tells a person their password was changed, so that a change they did not make is
// noticed (ASVS 2.2.3, 2.5.5): when, from which browser, and where to look.
var passwordChangedMail = mail.MustContent("password-changed",
	`Your password for {{.Brand.Product}} was changed`,
	`The password of your account {{.Data.Email}} at {{.Brand.Product}} was changed on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.

Every other browser and app you were signed in to was signed out.

If you did this, there is nothing more to do. If you did not, someone knows your password: contact the people who run {{.Brand.Product}} at once.

Your account: {{.Data.AccountURL}}
`,
	`<p>The password of your account <strong>{{.Data.Email}}</strong> at {{.Brand.Product}} was changed on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.</p>
<p>Every other browser and app you were signed in to was signed out.</p>
<p>If you did this, there is nothing more to do. If you did not, someone knows your password: contact the people who run {{.Brand.Product}} at once.</p>
{{.Button .Data.AccountURL "Open your account"}}`)

type passwordChangedData struct {
	Email, When, Browser, AccountURL string
}

// sendPasswordChanged mails the notice through the platform's mail component; a configuration without
// a mail relay sends none (and that is not an error: the operator chose no mail).
func (s *Service) sendPasswordChanged(ctx context.Context, rt *runtime, u *users.User, userAgent string) error {
	m, err := passwordChangedMail.Render("en", mail.Brand{Product: productName(rt)}, passwordChangedData{
		Email: u.Email, When: when(s.now()), Browser: browserName(userAgent), AccountURL: rt.issuer + "/account",
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
var secondFactorMail = mail.MustContent("second-factor-changed",
	`{{.Data.Subject}} at {{.Brand.Product}}`,
	`{{.Data.What}} on your account {{.Data.Email}} at {{.Brand.Product}}, on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.{{with .Data.Left}}
{{.}}{{end}}

If you did this, there is nothing more to do. If you did not, someone knows your password: change it and look at your account at once.

Your account: {{.Data.AccountURL}}
`,
	`<p>{{.Data.What}} on your account <strong>{{.Data.Email}}</strong> at {{.Brand.Product}}, on {{.Data.When}}{{with .Data.Browser}}, from {{.}}{{end}}.</p>{{with .Data.Left}}
<p>{{.}}</p>{{end}}
<p>If you did this, there is nothing more to do. If you did not, someone knows your password: change it and look at your account at once.</p>
{{.Button .Data.AccountURL "Open your account"}}`)

// A second-factor change, as the mail names it.
type secondFactorChange struct{ Subject, What string }

var (
	factorOn       = secondFactorChange{"Two-step sign-in was turned on", "Two-step sign-in (an authenticator app) was turned on"}
	factorOff      = secondFactorChange{"Two-step sign-in was turned off", "Two-step sign-in was turned off"}
	factorCodes    = secondFactorChange{"New recovery codes were made", "New recovery codes were made (the earlier ones no longer work)"}
	factorCodeUsed = secondFactorChange{"A recovery code was used", "A recovery code was used to sign in"}
)

type secondFactorData struct {
	Subject, What, Email, When, Browser, Left, AccountURL string
}

// mailSecondFactor sends the notice after the answer (the person is looking at the page that shows the
// change; a slow relay must not hold it). left is how many recovery codes remain, or -1 when not known
// or not relevant. A failure is logged.
func (s *Service) mailSecondFactor(ctx context.Context, rt *runtime, u *users.User, change secondFactorChange, userAgent string, left int) {
	d := secondFactorData{Subject: change.Subject, What: change.What, Email: u.Email, When: when(s.now()),
		Browser: browserName(userAgent), AccountURL: rt.issuer + "/account"}
	switch {
	case left == 0:
		d.Left = "You have no recovery codes left: make new ones on your account page."
	case left > 0:
		d.Left = fmt.Sprintf("You have %s left.", plural(left, "recovery code"))
	}
	s.sendLater(ctx, "second factor ("+change.Subject+")", func(ctx context.Context) error {
		m, err := secondFactorMail.Render("en", mail.Brand{Product: productName(rt)}, d)
		if err != nil {
			return err
		}
		m.To = []string{u.Email}
		return s.sendMail(ctx, m)
	})
}
