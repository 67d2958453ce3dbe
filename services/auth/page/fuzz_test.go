package page

import (
	"slices"
	"strings"
	"testing"
)

// Match reads two headers a browser or an attacker writes: it never panics and always answers a
// language the pages have. translate reads the handlers' messages (which carry typed addresses and
// names): it never panics, and what it does not know comes back as it is.
func FuzzMatchAndTranslate(f *testing.F) {
	f.Add("de", "en-US,en;q=0.9", "Wrong e-mail address or password.")
	f.Add("fr de-CH", "*;q=0.1,de-AT", "Too many failed sign-ins. Try again in 30 s.")
	f.Add("", "de;q=x,,,;", "If %s has an account, we have sent it a link to reset the password. It works for %s.")
	f.Add("x-"+strings.Repeat("a", 300), "zh-Hant-TW-u-ca-chinese", "for %!s(MISSING) on on on")
	f.Fuzz(func(t *testing.T, ui, al, msg string) {
		if l := Match(ui, al); !slices.Contains(Languages, l) {
			t.Fatalf("Match(%q, %q) = %q", ui, al, l)
		}
		for _, lang := range Languages {
			_ = translate(lang, msg)
		}
		if translate("en", msg) != msg {
			t.Fatalf("English changed %q", msg)
		}
	})
}
