package mail

import (
	"regexp"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/services/platform/wcag"
)

var verify = MustContent("verify",
	`Confirm your address for {{.Brand.Product}}`,
	"Hello {{.Data.Name}},\n\nconfirm your address within {{.Data.Minutes}} minutes:\n{{.Data.Link}}\n",
	`<p>Hello {{.Data.Name}},</p><p>confirm your address within {{.Data.Minutes}} minutes.</p>{{.Button .Data.Link "Confirm my address"}}<p>Or open <a href="{{.Data.Link}}">{{.Data.Link}}</a></p>`)

type verifyData struct {
	Name    string
	Link    string
	Minutes int
}

func TestRender_FillsSubjectTextAndHTMLInTheLayout(t *testing.T) {
	m, err := verify.Render("de", Brand{Product: "Acme", Accent: "#0b7a3e", LogoURL: "https://acme.example/logo.png"},
		verifyData{Name: "Zoë <script>alert(1)</script>", Link: "https://id.acme.example/verify?t=a&b=c", Minutes: 30})
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "Confirm your address for Acme" {
		t.Errorf("subject %q", m.Subject)
	}
	for _, want := range []string{"Acme\n\nHello Zoë <script>alert(1)</script>,", "https://id.acme.example/verify?t=a&b=c", "\n-- \nAcme\n"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, m.Text)
		}
	}
	for _, want := range []string{`<html lang="de" dir="ltr">`, `<meta name="color-scheme" content="light dark">`, "prefers-color-scheme:dark",
		"<title>Confirm your address for Acme</title>", `Zoë &lt;script&gt;alert(1)&lt;/script&gt;`,
		`href="https://id.acme.example/verify?t=a&amp;b=c"`, `alt="Acme"`, "background:#0b7a3e;color:#ffffff"} {
		if !strings.Contains(m.HTML, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if strings.Contains(m.HTML, "<script>") || strings.Contains(m.HTML, "ZgotmplZ") {
		t.Error("unescaped or refused value in the HTML")
	}
	// Nothing outside the mail is needed: the only URLs fetched are the optional logo's.
	for _, src := range regexp.MustCompile(`(?i)(?:src|@import|url\()\s*=?\s*"?([^" )]+)`).FindAllStringSubmatch(m.HTML, -1) {
		if src[1] != "https://acme.example/logo.png" {
			t.Errorf("external resource %q", src[1])
		}
	}
}

func TestRender_WithoutLogo_NamesTheProductAndLoadsNothing(t *testing.T) {
	m, err := verify.Render("", Brand{Product: "Acme"}, verifyData{Name: "A", Link: "https://x.example/", Minutes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.HTML, "<img") || !strings.Contains(m.HTML, `<html lang="en"`) || !strings.Contains(m.HTML, ">Acme</p>") {
		t.Errorf("HTML:\n%s", m.HTML)
	}
}

func TestRender_ButtonRefusesAJavascriptURL(t *testing.T) {
	m, err := verify.Render("en", Brand{Product: "Acme"}, verifyData{Link: "javascript:alert(1)"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.HTML, `href="javascript:`) {
		t.Errorf("a javascript: URL reached the HTML")
	}
}

func TestRender_Errors(t *testing.T) {
	for name, b := range map[string]Brand{
		"no product":    {},
		"accent":        {Product: "A", Accent: "red"},
		"http logo":     {Product: "A", LogoURL: "http://x.example/l.png"},
		"relative logo": {Product: "A", LogoURL: "/l.png"},
	} {
		if _, err := verify.Render("en", b, verifyData{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := verify.Render("en", Brand{Product: "A"}, map[string]any{"Name": "x"}); err == nil {
		t.Error("a missing data key was accepted")
	}
	if _, err := NewContent("bad", "{{", "", ""); err == nil {
		t.Error("a broken template parsed")
	}
}

func TestColors_MeetWCAGContrastForEveryAccent(t *testing.T) {
	for _, accent := range []string{"#1f5fd6", "#ffb000", "#777777", "#000000", "#ffffff", "#0b7a3e", "#e11d48", "#7f7f7f", "#808080"} {
		c := colorsFor(accent)
		if r := wcag.Contrast(string(c.Accent), string(c.AccentFG)); r < 4.5 {
			t.Errorf("%s: button text %s at %.2f:1", accent, c.AccentFG, r)
		}
		if r := wcag.Contrast(string(c.LinkLight), cardLight); r < 4.5 {
			t.Errorf("%s: light link %s at %.2f:1", accent, c.LinkLight, r)
		}
		if r := wcag.Contrast(string(c.LinkDark), cardDark); r < 4.5 {
			t.Errorf("%s: dark link %s at %.2f:1", accent, c.LinkDark, r)
		}
	}
	if r := wcag.Contrast(textLight, cardLight); r < 7 {
		t.Errorf("light text %.2f:1", r)
	}
	if r := wcag.Contrast(textDark, cardDark); r < 7 {
		t.Errorf("dark text %.2f:1", r)
	}
	if dir("ar-EG") != "rtl" || dir("en") != "ltr" {
		t.Error("dir")
	}
}
