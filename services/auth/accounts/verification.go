package accounts

import (
	"context"
	"errors"
	"time"

	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// LinkVerify is the purpose of e-mail verification links (D29).
const LinkVerify = "verify"

// VerificationLink issues a verification link of u's address, for a sign-up or sign-in at the client
// clientID ("" for none).
func (o *Ops) VerificationLink(ctx context.Context, u *users.User, clientID string) (string, error) {
	tok, err := o.links.Issue(ctx, link.Link{Purpose: LinkVerify, User: u.ID, Bind: u.Email, Client: clientID}, o.auth().VerificationLinkLifetime.D())
	if err != nil {
		return "", err
	}
	return authmail.LinkURL(o.issuer(), "/account/verify", tok), nil
}

// SendVerificationMail issues a verification link and mails it to u, in lang, naming app (the client's
// name; "" names the product) and the client clientID.
func (o *Ops) SendVerificationMail(ctx context.Context, u *users.User, app, clientID, lang string) error {
	href, err := o.VerificationLink(ctx, u, clientID)
	if err != nil {
		return err
	}
	return o.SendLinkMail(ctx, verifyMail, lang, u, app, href, o.auth().VerificationLinkLifetime.D())
}

// ErrAlreadyVerified: SendVerification was asked for an account whose address is verified already.
var ErrAlreadyVerified = errors.New("the address is verified already")

// SendVerification mails the account with address email the verification link a sign-up sends (for
// `formsservice users send-verification`, an operator's request: no throttle, no uniform answer). It
// refuses an unknown account (users.ErrNotFound), a disabled one (users.ErrDisabled) and a verified one
// (ErrAlreadyVerified). Without a relay configured nothing is sent and nil returned, as for every auth
// mail: the command checks for a relay first. lang is the mail's language, one of page.Languages
// (the person's, as the operator knows it; English when empty or not one of them).
func (o *Ops) SendVerification(ctx context.Context, email, lang string) (*users.User, error) {
	u, err := o.users.ByEmail(ctx, email)
	switch {
	case err != nil:
		return nil, err
	case u.Disabled:
		return u, users.ErrDisabled
	case u.EmailVerified:
		return u, ErrAlreadyVerified
	}
	return u, o.SendVerificationMail(ctx, u, "", "", page.Match(lang, ""))
}

type linkMailData struct {
	Email, App, Link, Valid string
}

// SendLinkMail renders c in lang for u with its link and sends it through the platform's mail component.
func (o *Ops) SendLinkMail(ctx context.Context, c authmail.Text, lang string, u *users.User, app, href string, valid time.Duration) error {
	m, err := o.linkMail(c, lang, u, app, href, valid)
	if err != nil {
		return err
	}
	return o.mail.Send(ctx, m)
}

// linkMail renders c in lang for u with its link.
func (o *Ops) linkMail(c authmail.Text, lang string, u *users.User, app, href string, valid time.Duration) (mail.Message, error) {
	a := o.auth()
	if app == "" {
		app = authmail.ProductName(a)
	}
	m, err := c.Render(lang, authmail.Brand(a, app), linkMailData{Email: u.Email, App: app, Link: href, Valid: authmail.LifetimeIn(lang, valid)})
	if err != nil {
		return mail.Message{}, err
	}
	m.To = []string{u.Email}
	return m, nil
}

// verifyMail is the verification link's mail: what it is for, how long its link works, and what to do
// when it was not asked for.
var verifyMail = authmail.Text{
	"en": mail.MustContent("verify-email",
		`Confirm your e-mail address for {{.Data.App}}`,
		`Confirm that {{.Data.Email}} is your address for {{.Data.App}} by opening this link:

{{.Data.Link}}

The link works once, for {{.Data.Valid}}. If you did not ask for it, you can ignore this message.`,
		`<p>Confirm that <strong>{{.Data.Email}}</strong> is your address for <strong>{{.Data.App}}</strong>.</p>
{{.Button .Data.Link "Confirm my address"}}
<p>The link works once, for {{.Data.Valid}}. If you did not ask for it, you can ignore this message.</p>`),
	"de": mail.MustContent("verify-email",
		`Bestätigen Sie Ihre E-Mail-Adresse für {{.Data.App}}`,
		`Bestätigen Sie mit diesem Link, dass {{.Data.Email}} Ihre Adresse für {{.Data.App}} ist:

{{.Data.Link}}

Der Link ist {{.Data.Valid}} gültig und funktioniert nur einmal. Wenn Sie ihn nicht angefordert haben, können Sie diese Nachricht ignorieren.`,
		`<p>Bestätigen Sie, dass <strong>{{.Data.Email}}</strong> Ihre Adresse für <strong>{{.Data.App}}</strong> ist.</p>
{{.Button .Data.Link "Adresse bestätigen"}}
<p>Der Link ist {{.Data.Valid}} gültig und funktioniert nur einmal. Wenn Sie ihn nicht angefordert haben, können Sie diese Nachricht ignorieren.</p>`),
}
