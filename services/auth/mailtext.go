package auth

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// mailText is one of auth's mails in each language the pages speak (page.Languages): a person who
// reads the pages in German gets the mail the page announces in German too. English is the fallback.
type mailText map[string]*mail.Content

// render renders the mail in lang, or in English when there is no such version.
func (t mailText) render(lang string, b mail.Brand, data any) (mail.Message, error) {
	c, ok := t[lang]
	if !ok {
		lang, c = "en", t["en"]
	}
	return c.Render(lang, b, data)
}

// requestLang is the language a request's pages and mails are in: its authorization request's
// ui_locales, then Accept-Language (page.Match).
func requestLang(r *http.Request) string {
	return page.Match(r.URL.Query().Get("ui_locales"), r.Header.Get("Accept-Language"))
}

// lifetimeIn says a link's lifetime in words in lang: "15 minutes", "15 Minuten".
func lifetimeIn(lang string, d time.Duration) string {
	if lang != "de" {
		return lifetime(d)
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

// whenIn says a moment in lang: "2 Jan 2006, 15:04 UTC", "2. Januar 2006, 15:04 UTC".
func whenIn(lang string, t time.Time) string {
	if lang != "de" {
		return when(t)
	}
	if t.IsZero() {
		return "zu unbekannter Zeit"
	}
	t = t.UTC()
	return fmt.Sprintf("%d. %s %d, %s UTC", t.Day(), germanMonths[t.Month()-1], t.Year(), t.Format("15:04"))
}

// browserIn names the browser of a user agent in lang: "Chrome on Linux", "Chrome unter Linux".
func browserIn(lang, ua string) string {
	b := browserName(ua)
	if lang != "de" {
		return b
	}
	return strings.Replace(strings.Replace(b, "A browser", "Ein Browser", 1), " on ", " unter ", 1)
}
