package mfa

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/boombuler/barcode/qr"
)

// QRSVG draws content (an otpauth:// URI) as a QR code in inline SVG: one path of the dark modules on a
// white square with the four-module quiet zone scanners need, black on white in dark mode too (phones
// read inverted codes badly). It needs no style and no script, so the page's Content-Security-Policy
// stays as it is, and scales without blur. label is its text alternative.
func QRSVG(content, label string) (template.HTML, error) {
	code, err := qr.Encode(content, qr.M, qr.Auto)
	if err != nil {
		return "", err
	}
	b := code.Bounds()
	const quiet = 4
	size := b.Dx() + 2*quiet
	var path strings.Builder
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; {
			if r, _, _, _ := code.At(x, y).RGBA(); r != 0 { // light module
				x++
				continue
			}
			run := 1 // one rectangle per run of dark modules on a row
			for x+run < b.Max.X {
				if r, _, _, _ := code.At(x+run, y).RGBA(); r != 0 {
					break
				}
				run++
			}
			fmt.Fprintf(&path, "M%d %dh%dv1h-%dz", x-b.Min.X+quiet, y-b.Min.Y+quiet, run, run)
			x += run
		}
	}
	esc := template.HTMLEscapeString
	return template.HTML(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" class="qr" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d" shape-rendering="crispEdges">`+
		`<rect width="%d" height="%d" fill="#ffffff"/><path d="%s" fill="#000000"/></svg>`,
		esc(label), size, size, size*4, size*4, size, size, path.String())), nil
}
