package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// The mails of the mailed journeys (verify.go, reset.go). Each says what it is for, how long its link
// works, and what to do when it was not asked for.
var (
	verifyMail = mailText{
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
	resetMail = mailText{
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
)

type linkMailData struct {
	Email, App, Link, Valid string
}

// sendLinkMail renders c in lang for u with its link and sends it through the platform's mail component.
func (s *Service) sendLinkMail(ctx context.Context, rt *runtime, c mailText, lang string, u *users.User, app, href string, valid time.Duration) error {
	if app == "" {
		app = productName(rt)
	}
	m, err := c.render(lang, mailBrand(rt, app), linkMailData{Email: u.Email, App: app, Link: href, Valid: lifetimeIn(lang, valid)})
	if err != nil {
		return err
	}
	m.To = []string{u.Email}
	return s.sendMail(ctx, m)
}

// sendMail sends one of auth's mails, bounded to 30 s whatever the caller's context; without a relay
// configured there is nothing to send to, which is not an error (the dev server shows its outbox).
func (s *Service) sendMail(ctx context.Context, m mail.Message) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.mail.Send(ctx, m); err != nil && !errors.Is(err, mail.ErrNoRelay) {
		return err
	}
	return nil
}

// lifetime says a link's lifetime in words: "15 minutes", "24 hours".
func lifetime(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return plural(int(d/time.Hour), "hour")
	case d >= time.Minute:
		return plural(int(d/time.Minute), "minute")
	}
	return plural(int(d/time.Second), "second")
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// mailBrand is the mails' layout for product: the platform's accent colour (the layout derives readable
// colours from it, as the pages do) and its logo when it is https (a mail is read far from a loopback
// address, and the layout takes https only).
func mailBrand(rt *runtime, product string) mail.Brand {
	b := rt.cfg.Auth.Branding
	m := mail.Brand{Product: product, Accent: b.AccentColor}
	if strings.HasPrefix(b.LogoURL, "https://") {
		m.LogoURL = b.LogoURL
	}
	return m
}
