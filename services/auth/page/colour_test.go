package page

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/services/platform/wcag"
)

// Any accent, however light or dark, gives colours that meet WCAG 2.2 AA on both cards: the fill 3:1
// against the card, its text 4.5:1 on the fill, links 4.5:1 against the card; and an accent that
// already meets a bound is used as it is.
func TestDeriveAccent_AnyColourMeetsAA(t *testing.T) {
	accents := []string{"#1f5fd6", "#6f9cff", "#ffff00", "#ffffff", "#000000", "#777777", "#00aa55", "#ff6600", "#e6e6fa", "#1f2226", "#808080", "#ff0000"}
	for i := 0; i < 4096; i += 97 { // and a spread over the whole cube
		accents = append(accents, fmt.Sprintf("#%02x%02x%02x", (i*37)%256, (i*11)%256, (i*5)%256))
	}
	for _, a := range accents {
		for _, card := range []string{cardLight, cardDark} {
			c := deriveAccent(a, card)
			if r := wcag.Contrast(c.Fill, card); r < 3 {
				t.Errorf("%s on %s: fill %s at %.2f:1", a, card, c.Fill, r)
			}
			if r := wcag.Contrast(c.Text, c.Fill); r < 4.5 {
				t.Errorf("%s on %s: button text %s on %s at %.2f:1", a, card, c.Text, c.Fill, r)
			}
			if r := wcag.Contrast(c.Link, card); r < 4.5 {
				t.Errorf("%s on %s: link %s at %.2f:1", a, card, c.Link, r)
			}
		}
	}
	// The pages' own blue meets every bound on white: it stays as it is.
	if c := deriveAccent("#1f5fd6", cardLight); c.Fill != "#1f5fd6" || c.Link != "#1f5fd6" || c.Text != "#ffffff" {
		t.Errorf("the default blue was changed: %+v", c)
	}
	// Yellow (1.07:1 on white) is darkened, not refused.
	if c := deriveAccent("#ffff00", cardLight); c.Fill == "#ffff00" || c.Text != "#ffffff" && c.Text != "#000000" {
		t.Errorf("yellow on white: %+v", c)
	}
}

// The pages' own colours (page.css's custom properties) meet AA: text 4.5:1, the field borders and the
// focus ring 3:1 against the card and the page around it, in light and dark mode. The issue this
// answers measured the old focus ring at 1.8:1 and the borders at 1.6:1.
func TestPageColours_MeetAA(t *testing.T) {
	light := vars(t, regexp.MustCompile(`^:root\{([^}]*)\}`).FindStringSubmatch(pageCSS))
	dark := vars(t, regexp.MustCompile(`prefers-color-scheme:dark\)\{:root\{([^}]*)\}`).FindStringSubmatch(pageCSS))
	for k, v := range light {
		if _, ok := dark[k]; !ok {
			dark[k] = v // inherited
		}
	}
	for scheme, v := range map[string]map[string]string{"light": light, "dark": dark} {
		for _, c := range []struct {
			what, fg, bg string
			min          float64
		}{
			{"text", "fg", "card", 4.5}, {"muted text", "muted", "card", 4.5}, {"error text", "error", "error-bg", 4.5},
			{"error text on the card", "error", "card", 4.5}, {"links", "link", "card", 4.5}, {"button text", "accent-fg", "accent", 4.5},
			{"field border", "field", "card", 3}, {"focus ring on the card", "focus", "card", 3}, {"focus ring on the page", "focus", "bg", 3},
		} {
			if v[c.fg] == "" || v[c.bg] == "" {
				t.Errorf("%s: page.css has no --%s or --%s", scheme, c.fg, c.bg)
				continue
			}
			if r := wcag.Contrast(v[c.fg], v[c.bg]); r < c.min {
				t.Errorf("%s: %s --%s %s on --%s %s at %.2f:1, want %.1f:1", scheme, c.what, c.fg, v[c.fg], c.bg, v[c.bg], r, c.min)
			}
		}
	}
}

// vars are the #rrggbb custom properties of a :root block (#fff is written out).
func vars(t *testing.T, m []string) map[string]string {
	t.Helper()
	if m == nil {
		t.Fatal("page.css: no :root block")
	}
	out := map[string]string{}
	for _, d := range strings.Split(m[1], ";") {
		k, v, _ := strings.Cut(d, ":")
		if !strings.HasPrefix(k, "--") || !strings.HasPrefix(v, "#") {
			continue
		}
		if len(v) == 4 {
			v = "#" + strings.Repeat(v[1:2], 2) + strings.Repeat(v[2:3], 2) + strings.Repeat(v[3:4], 2)
		}
		out[k[2:]] = v
	}
	return out
}
