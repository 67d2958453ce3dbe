package main

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
	"time"
)

// latencySVG draws latency (log scale, ms) against the number of concurrent connections (log scale),
// one colour per target: p50 dashed, p99 solid, p99.9 dotted. Plain SVG, written by hand: no dependency.
func latencySVG(targets []*reportTarget, each time.Duration) string {
	const (
		w, h                     = 900, 480
		left, right, top, bottom = 70, 330, 50, 60
	)
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}
	var levels []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, t := range targets {
		for _, p := range t.points {
			if !slices.Contains(levels, p.conns) {
				levels = append(levels, p.conns)
			}
			for _, d := range []time.Duration{p.res.p50, p.res.p99, p.p999} {
				if v := msf(d); v > 0 {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
	}
	if len(levels) == 0 || math.IsInf(lo, 0) {
		return `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"><text x="10" y="25">no data</text></svg>`
	}
	yLo, yHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yHi == yLo {
		yHi++
	}
	xLo, xHi := math.Log2(float64(slices.Min(levels))), math.Log2(float64(slices.Max(levels)))
	if xHi == xLo {
		xHi++
	}
	px := func(conns int) float64 {
		return left + (math.Log2(float64(conns))-xLo)/(xHi-xLo)*float64(w-left-right)
	}
	py := func(v float64) float64 {
		return float64(h-bottom) - (math.Log10(v)-yLo)/(yHi-yLo)*float64(h-top-bottom)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">Latency against load (closed loop, %s per point, loopback)</text>`+"\n", left, each)
	// Grid and axes.
	for e := yLo; e <= yHi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < math.Pow(10, yLo) || v > math.Pow(10, yHi) {
				continue
			}
			y := py(v)
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
			}
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", left, y, w-right, y, stroke)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, y, trimFloat(v))
		}
	}
	for _, c := range levels {
		x := px(c)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", x, top, x, h-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x, h-bottom+18, c)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, h-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">concurrent connections (log scale)</text>`+"\n", (left+w-right)/2, h-18)
	fmt.Fprintf(&b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">latency, ms (log scale)</text>`+"\n", (top+h-bottom)/2)

	// Series.
	styles := []struct {
		label, dash string
		get         func(reportPoint) time.Duration
	}{
		{"p50", "6 4", func(p reportPoint) time.Duration { return p.res.p50 }},
		{"p99", "", func(p reportPoint) time.Duration { return p.res.p99 }},
		{"p99.9", "2 3", func(p reportPoint) time.Duration { return p.p999 }},
	}
	for i, t := range targets {
		color := colors[i%len(colors)]
		for _, st := range styles {
			var pts []string
			for _, p := range t.points {
				if v := msf(st.get(p)); v > 0 {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.conns), py(v)))
				}
			}
			dash := ""
			if st.dash != "" {
				dash = ` stroke-dasharray="` + st.dash + `"`
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"><title>%s %s</title></polyline>`+"\n",
				color, dash, strings.Join(pts, " "), html.EscapeString(t.name), st.label)
			for _, pt := range pts {
				x, y, _ := strings.Cut(pt, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", x, y, color)
			}
		}
		// Legend: the target, and its throughput at the highest concurrency.
		ly := top + 10 + i*34
		last := t.points[len(t.points)-1]
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", w-right+16, ly, w-right+40, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", w-right+46, ly, html.EscapeString(t.name))
		fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle" fill="#555">%.0f req/s at %d connections</text>`+"\n",
			w-right+46, ly+15, last.res.perSecond, last.conns)
	}
	ly := top + 10 + len(targets)*34 + 10
	for j, st := range styles {
		y := ly + j*18
		dash := ""
		if st.dash != "" {
			dash = ` stroke-dasharray="` + st.dash + `"`
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333" stroke-width="2"%s/>`+"\n", w-right+16, y, w-right+40, y, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", w-right+46, y, st.label)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
