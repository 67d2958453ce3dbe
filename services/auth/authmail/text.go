// Package authmail is what every mail of the provider shares: a mail's text in each language the pages
// speak, the platform's look, the words for times, lifetimes and browsers in each language, and sending
// through the platform's mail component bounded in time. The mails themselves live with their journeys
// (package journeys) and the account notices (package accounts).
package authmail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// Text is one of auth's mails in each language the pages speak (page.Languages): a person who reads
// the pages in German gets the mail the page announces in German too. English is the fallback.
type Text map[string]*mail.Content

// Render renders the mail in lang, or in English when there is no such version.
func (t Text) Render(lang string, b mail.Brand, data any) (mail.Message, error) {
	c, ok := t[lang]
	if !ok {
		lang, c = "en", t["en"]
	}
	return c.Render(lang, b, data)
}

// Brand is the mails' layout for product: the platform's accent colour (the layout derives readable
// colours from it, as the pages do) and its logo when it is https (a mail is read far from a loopback
// address, and the layout takes https only).
func Brand(a config.Auth, product string) mail.Brand {
	b := a.Branding
	m := mail.Brand{Product: product, Accent: b.AccentColor}
	if strings.HasPrefix(b.LogoURL, "https://") {
		m.LogoURL = b.LogoURL
	}
	return m
}

// Sender sends auth's mails through the platform's mail component.
type Sender struct{ Mail mail.Sender }

// Send sends one of auth's mails, bounded to 30 s whatever the caller's context; without a relay
// configured there is nothing to send to, which is not an error (the dev server shows its outbox).
func (s Sender) Send(ctx context.Context, m mail.Message) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.Mail.Send(ctx, m); err != nil && !errors.Is(err, mail.ErrNoRelay) {
		return err
	}
	return nil
}

// SendLater sends a mail after the answer, so that the time of the answer does not tell an address with
// an account from one without (the mail is the only difference, and it goes to the address's owner),
// and a slow relay does not hold the page. A failure is logged.
func SendLater(ctx context.Context, log *slog.Logger, what string, send func(context.Context) error) {
	ctx = context.WithoutCancel(ctx)
	go func() {
		if err := send(ctx); err != nil {
			log.Warn(what+": the mail was not sent", "err", err)
		}
	}()
}

// Lifetime says a link's lifetime in words: "15 minutes", "24 hours".
func Lifetime(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return Plural(int(d/time.Hour), "hour")
	case d >= time.Minute:
		return Plural(int(d/time.Minute), "minute")
	}
	return Plural(int(d/time.Second), "second")
}

// Plural is n units in English: "1 hour", "2 hours".
func Plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// LifetimeIn says a link's lifetime in words in lang: "15 minutes", "15 Minuten".
func LifetimeIn(lang string, d time.Duration) string {
	if lang != "de" {
		return Lifetime(d)
	}
	n, one, many := int(d/time.Second), "Sekunde", "Sekunden"
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		n, one, many = int(d/time.Hour), "Stunde", "Stunden"
	case d >= time.Minute:
		n, one, many = int(d/time.Minute), "Minute", "Minuten"
	}
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// germanMonths are the months as a German date writes them.
var germanMonths = [...]string{"Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember"}

// When says a moment in English: "2 Jan 2006, 15:04 UTC".
func When(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	return t.UTC().Format("2 Jan 2006, 15:04 UTC")
}

// WhenIn says a moment in lang: "2 Jan 2006, 15:04 UTC", "2. Januar 2006, 15:04 UTC".
func WhenIn(lang string, t time.Time) string {
	if lang != "de" {
		return When(t)
	}
	if t.IsZero() {
		return "zu unbekannter Zeit"
	}
	t = t.UTC()
	return fmt.Sprintf("%d. %s %d, %s UTC", t.Day(), germanMonths[t.Month()-1], t.Year(), t.Format("15:04"))
}

// BrowserName is a short name for a user agent ("Firefox on Linux"), for people to recognise their
// devices; the full string is shown beside it.
func BrowserName(ua string) string {
	browser := "A browser"
	for _, b := range []struct{ token, name string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"Firefox/", "Firefox"}, {"HeadlessChrome/", "Chrome (headless)"},
		{"Chrome/", "Chrome"}, {"Chromium/", "Chromium"}, {"Safari/", "Safari"}, {"curl/", "curl"},
	} {
		if strings.Contains(ua, b.token) {
			browser = b.name
			break
		}
	}
	for _, o := range []struct{ token, name string }{
		{"Android", "Android"}, {"iPhone", "iOS"}, {"iPad", "iPadOS"}, {"CrOS", "ChromeOS"}, {"Mac OS X", "macOS"},
		{"Windows", "Windows"}, {"Linux", "Linux"},
	} {
		if strings.Contains(ua, o.token) {
			return browser + " on " + o.name
		}
	}
	return browser
}

// BrowserIn names the browser of a user agent in lang: "Chrome on Linux", "Chrome unter Linux".
func BrowserIn(lang, ua string) string {
	b := BrowserName(ua)
	if lang != "de" {
		return b
	}
	return strings.Replace(strings.Replace(b, "A browser", "Ein Browser", 1), " on ", " unter ", 1)
}

// ProductName names the service in authenticator apps and mails: the configured product name, else
// the issuer's host.
func ProductName(a config.Auth) string {
	if n := a.Branding.ProductName; n != "" {
		return n
	}
	if u, err := url.Parse(strings.TrimSuffix(a.Issuer, "/")); err == nil && u.Host != "" {
		return u.Host
	}
	return "formsservice"
}

// LinkURL is the address of a mailed link's page (path below the issuer) with its token.
func LinkURL(issuer, path, token string) string {
	return issuer + path + "?" + url.Values{"token": {token}}.Encode()
}
