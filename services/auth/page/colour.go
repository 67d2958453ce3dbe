package page

import (
	"fmt"
	"math"
	"strconv"

	"github.com/formsservice/formsservice/services/platform/wcag"
)

// The accent colour of a brand is never refused for its contrast: the pages derive from it, for each of
// the light and dark card, a button fill with at least 3:1 against the card (WCAG 2.2 1.4.11), a button
// text, black or white, with at least 4.5:1 on that fill (one of the two always reaches 4.58:1), and a
// link colour with at least 4.5:1 against the card (1.4.3). A colour short of a bound is mixed towards
// black on the light card and towards white on the dark one until it reaches it, so the hue stays
// (docs/architecture.md D36).

// The cards the colours are measured against (page.css --card) and the two bounds.
const (
	cardLight       = "#ffffff"
	cardDark        = "#1f2226"
	minUIContrast   = 3.0
	minTextContrast = 4.5
)

// accentColours are the colours derived from one accent for one scheme.
type accentColours struct{ Fill, Text, Link string }

// deriveAccent derives the fill, its text and the link colour for the card of one scheme.
func deriveAccent(accent, card string) accentColours {
	towards := "#000000"
	if wcag.Luminance(card) < 0.18 {
		towards = "#ffffff"
	}
	fill := reach(accent, card, towards, minUIContrast)
	text := "#ffffff"
	if wcag.Contrast(fill, "#000000") > wcag.Contrast(fill, "#ffffff") {
		text = "#000000"
	}
	return accentColours{Fill: fill, Text: text, Link: reach(accent, card, towards, minTextContrast)}
}

// reach mixes c towards target in steps of 2% until it has min contrast against bg. Mixing towards
// black (on a light card) or white (on a dark one) only raises the contrast, and the end (black, white)
// has more than 4.5:1 against either card.
func reach(c, bg, target string, min float64) string {
	for i := 0; i <= 50; i++ {
		m := mix(c, target, float64(i)/50)
		if wcag.Contrast(m, bg) >= min {
			return m
		}
	}
	return target
}

func mix(a, b string, t float64) string {
	ra, ga, ba := rgb(a)
	rb, gb, bb := rgb(b)
	f := func(x, y uint8) uint8 { return uint8(math.Round(float64(x)*(1-t) + float64(y)*t)) }
	return fmt.Sprintf("#%02x%02x%02x", f(ra, rb), f(ga, gb), f(ba, bb))
}

func rgb(hex string) (r, g, b uint8) {
	v, _ := strconv.ParseUint(hex[1:7], 16, 32)
	return uint8(v >> 16), uint8(v >> 8), uint8(v)
}
