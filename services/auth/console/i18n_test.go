package console

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The page-text rules of the hosted pages (services/auth/page, TestGerman_EveryTextOfThePages) for the
// console: index.html has no letters outside its {{t}} actions (nor in the attributes people read), and
// every text of index.html and of a t('…') call in console.js has its German.
func TestGerman_EveryTextOfTheConsole(t *testing.T) {
	html, err := os.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile("assets/console.js")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range regexp.MustCompile(`\{\{t \.Lang "([^"]*)"`).FindAllStringSubmatch(string(html), -1) {
		texts = append(texts, m[1])
	}
	noActions := regexp.MustCompile(`(?s)\{\{.*?\}\}`).ReplaceAllString(string(html), "")
	noActions = regexp.MustCompile(`(?s)<script.*?</script>`).ReplaceAllString(noActions, "")
	letters := regexp.MustCompile(`\pL`)
	for _, m := range regexp.MustCompile(`(aria-label|alt|title|placeholder)="([^"]*)"`).FindAllStringSubmatch(noActions, -1) {
		if letters.MatchString(m[2]) {
			t.Errorf("index.html: %s=%q is not translated", m[1], m[2])
		}
	}
	for _, text := range regexp.MustCompile(`(?s)<[^>]*>`).Split(noActions, -1) {
		if letters.MatchString(text) {
			t.Errorf("index.html: text %q is not translated", strings.TrimSpace(text))
		}
	}
	calls := regexp.MustCompile(`\bt\('((?:[^'\\]|\\.)*)'`).FindAllStringSubmatch(string(js), -1)
	if len(calls) < 50 {
		t.Fatalf("found only %d t('…') calls in console.js: is the pattern still right?", len(calls))
	}
	for _, m := range calls {
		texts = append(texts, m[1])
	}
	same := map[string]bool{"Browser": true, "Client": true, "Clients": true, "Name": true, "Scopes": true, "APIs": true, "Spam": true,
		"Passkeys": true, "%s KB": true, "%s MB": true}
	for _, s := range texts {
		if tr, ok := de[s]; !ok || tr == s && !same[s] {
			t.Errorf("no German for %q", s)
		}
		if strings.Count(de[s], "%s") != strings.Count(s, "%s") {
			t.Errorf("the German of %q has other placeholders: %q", s, de[s])
		}
	}
}

// The page's text in German, its data block in German too.
func TestTranslate(t *testing.T) {
	if got := translate("de", "Sign out"); got != "Abmelden" {
		t.Errorf("translate(de, Sign out) = %q", got)
	}
	if got := translate("en", "Sign out"); got != "Sign out" {
		t.Errorf("translate(en, Sign out) = %q", got)
	}
	if got := translate("de", "not a text of ours"); got != "not a text of ours" {
		t.Errorf("an unknown text became %q", got)
	}
}
