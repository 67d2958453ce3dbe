// Package wcag computes WCAG 2.x contrast: the one formula the hosted pages (services/auth/page) and
// the mail layout (services/platform/mail) derive their readable colours with.
package wcag

import (
	"math"
	"strconv"
)

// Contrast is the WCAG contrast ratio of two #rrggbb colours, from 1 (the same) to 21 (black on white).
func Contrast(a, b string) float64 {
	la, lb := Luminance(a), Luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// Luminance is WCAG's relative luminance of a #rrggbb colour, from 0 (black) to 1 (white).
func Luminance(hex string) float64 {
	ch := func(i int) float64 {
		v, _ := strconv.ParseUint(hex[i:i+2], 16, 8)
		c := float64(v) / 255
		if c <= 0.04045 {
			return c / 12.92
		}
		return math.Pow((c+0.055)/1.055, 2.4)
	}
	return 0.2126*ch(1) + 0.7152*ch(3) + 0.0722*ch(5)
}
