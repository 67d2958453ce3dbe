package auth

import (
	"context"

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
	m, err := passwordChangedMail.Render("en", mailBrand(rt, productName(rt)), passwordChangedData{
		Email: u.Email, When: when(s.now()), Browser: browserName(userAgent), AccountURL: rt.issuer + "/account",
	})
	if err != nil {
		return err
	}
	m.To = []string{u.Email}
	return s.sendMail(ctx, m)
}
