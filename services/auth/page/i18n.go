package page

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/text/language"
)

// The pages' languages: English, the language they are written in, and German (i18n_de.go). A request
// picks one with its authorization request's ui_locales (OpenID Connect Core 3.1.2.1), then its
// Accept-Language header, matched by golang.org/x/text/language (which knows that de-AT and
// gsw are close to de); English when nothing matches.

// Languages are the tags the pages are written in, the first the fallback (discovery's
// ui_locales_supported).
var Languages = []string{"en", "de"}

var matcher = language.NewMatcher([]language.Tag{language.English, language.German})

// Match picks the language of a page: the first of uiLocales (space-separated BCP 47 tags, the
// person's preference in order) the pages have, else the best of acceptLanguage, else English.
func Match(uiLocales, acceptLanguage string) string {
	if tags := strings.Fields(uiLocales); len(tags) > 0 {
		if len(tags) > 16 {
			tags = tags[:16]
		}
		if l, ok := match(tags...); ok {
			return l
		}
	}
	if len(acceptLanguage) > 1024 {
		return Languages[0] // no one's header is that long
	}
	if tags, _, err := language.ParseAcceptLanguage(acceptLanguage); err == nil && len(tags) > 0 {
		var ss []string
		for _, t := range tags {
			ss = append(ss, t.String())
		}
		if l, ok := match(ss...); ok {
			return l
		}
	}
	return Languages[0]
}

func match(tags ...string) (string, bool) {
	_, i, conf := matcher.Match(parse(tags)...)
	if conf == language.No {
		return "", false
	}
	return Languages[i], true
}

func parse(ss []string) []language.Tag {
	var tags []language.Tag
	for _, s := range ss {
		if t, err := language.Parse(s); err == nil {
			tags = append(tags, t)
		}
	}
	return tags
}

// catalogs are the translations by language: English text (or a fmt pattern with %s) to its
// translation. English has none.
var catalogs = map[string]map[string]string{"de": de}

// patterns are a catalog's keys with %s verbs, as regular expressions, for the messages the handlers
// build with fmt ("Try again in 30 s."): the page translates them as they arrive, so the handlers stay
// unaware of the language.
type pattern struct {
	re          *regexp.Regexp
	translation string
}

var patterns = map[string][]pattern{}

func init() {
	for lang, cat := range catalogs {
		for key, tr := range cat {
			if !strings.Contains(key, "%s") {
				continue
			}
			parts := strings.Split(key, "%s")
			for i := range parts {
				parts[i] = regexp.QuoteMeta(parts[i])
			}
			patterns[lang] = append(patterns[lang], pattern{regexp.MustCompile("^" + strings.Join(parts, "(.+?)") + "$"), tr})
		}
		// The longest pattern first (the most specific), and always in the same order.
		slices.SortFunc(patterns[lang], func(a, b pattern) int {
			if d := len(b.re.String()) - len(a.re.String()); d != 0 {
				return d
			}
			return strings.Compare(a.re.String(), b.re.String())
		})
	}
}

// translate is s in lang: its catalog's entry, or a pattern's with the parts that vary filled in, or s
// as it is (names, addresses and anything the catalog does not know).
func translate(lang, s string) string {
	cat := catalogs[lang]
	if cat == nil || s == "" {
		return s
	}
	if tr, ok := cat[s]; ok {
		return tr
	}
	// A message made of sentences ("Too many failed sign-ins. Try again in 30 s.") is translated
	// sentence by sentence when it is not known as a whole.
	for _, p := range patterns[lang] {
		if m := p.re.FindStringSubmatch(s); m != nil {
			args := make([]any, len(m)-1)
			for i, a := range m[1:] {
				args[i] = translate(lang, a)
			}
			return fmt.Sprintf(p.translation, args...)
		}
	}
	return s
}

// T is s in the language of the look w carries, for the texts the handlers send as JSON (the passkey
// script shows them).
func T(w http.ResponseWriter, s string) string { return translate(LookOf(w).Lang, s) }

// German is s in German (for tests and tools).
func German(s string) string { return translate("de", s) }
