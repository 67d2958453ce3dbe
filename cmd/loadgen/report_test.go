package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The token load keeps one refresh token per connection: each request carries the token the previous
// answer on that connection returned. The tokens start near 2 KiB, so the answers soon outgrow
// net/http's buffer and come chunked, as a real server's may.
func TestRunLoad_BuildAndRead_CarryStatePerConnection(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		tok := r.PostForm.Get("refresh_token")
		mu.Lock()
		seen[tok]++
		n := seen[tok]
		mu.Unlock()
		if n > 1 {
			w.WriteHeader(http.StatusBadRequest) // a reused token: the chain broke
			_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
			return
		}
		fmt.Fprintf(w, `{"refresh_token":"%s+"}`, tok)
	}))
	defer srv.Close()
	pad := strings.Repeat("-", 2000)
	start := []string{"a" + pad, "b" + pad, "c" + pad}
	chains := &tokenChains{tokens: slices.Clone(start)}
	res, err := runLoad(loadSpec{addr: strings.TrimPrefix(srv.URL, "http://"), conns: 3, want: 200,
		warmup: 20 * time.Millisecond, duration: 200 * time.Millisecond, build: chains.request, read: chains.answer})
	if err != nil {
		t.Fatal(err)
	}
	if res.requests < 10 || len(res.unexpected) != 0 {
		t.Fatalf("%d requests, unexpected answers %v (a token was sent twice)", res.requests, res.unexpected)
	}
	for i, tok := range chains.tokens {
		if !strings.HasPrefix(tok, start[i]+"+++") {
			t.Errorf("chain %d ended at %q, want it rotated several times", i, strings.TrimPrefix(tok, pad))
		}
	}
}

func TestLatencySVG_WellFormedWithOneSeriesPerTargetAndPercentile(t *testing.T) {
	point := func(c int, p50, p99, p999 time.Duration) reportPoint {
		return reportPoint{conns: c, res: loadResult{perSecond: 1000, p50: p50, p99: p99}, p999: p999}
	}
	targets := []*reportTarget{
		{name: "forms <POST> & co", points: []reportPoint{point(1, 100*time.Microsecond, time.Millisecond, 2*time.Millisecond), point(16, time.Millisecond, 9*time.Millisecond, 30*time.Millisecond)}},
		{name: "health", points: []reportPoint{point(1, 20*time.Microsecond, 50*time.Microsecond, 0), point(16, 80*time.Microsecond, time.Millisecond, 3*time.Millisecond)}},
	}
	svg := latencySVG(targets, 3*time.Second)
	dec := xml.NewDecoder(strings.NewReader(svg))
	polylines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	if polylines != 2*3 {
		t.Errorf("%d polylines, want 3 (p50, p99, p99.9) per target", polylines)
	}
	if !strings.Contains(svg, "forms &lt;POST&gt; &amp; co") {
		t.Error("target names are not escaped")
	}
	if empty := latencySVG(nil, time.Second); !strings.Contains(empty, "no data") {
		t.Errorf("no points: %s", empty)
	}
}
