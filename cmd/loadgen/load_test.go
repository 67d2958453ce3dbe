package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunLoad_CountsAnswersAndSendsUniqueAddresses(t *testing.T) {
	var n atomic.Int64
	seen := make(chan string, 100000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Origin") != benchOrigin || !strings.Contains(string(b), `"consent":true`) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		select {
		case seen <- string(b):
		default:
		}
		if n.Add(1)%10 == 0 {
			w.WriteHeader(http.StatusOK) // every tenth answer is not the expected 201
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"status":"created"}`)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	res, err := runLoad(loadSpec{addr: addr, path: "/waitlist", kind: "waitlist", origin: benchOrigin, conns: 4,
		warmup: 50 * time.Millisecond, duration: 300 * time.Millisecond, want: 201})
	if err != nil {
		t.Fatal(err)
	}
	if res.requests == 0 || res.p50 <= 0 || res.p99 < res.p50 {
		t.Fatalf("result %+v", res)
	}
	if res.unexpected[200] == 0 || res.unexpected[400] != 0 {
		t.Fatalf("unexpected answers %v", res.unexpected)
	}
	close(seen)
	bodies := map[string]bool{}
	for b := range seen {
		if bodies[b] {
			t.Fatalf("the same body twice: %s", b)
		}
		bodies[b] = true
	}

	rate, err := runLoad(loadSpec{addr: addr, path: "/waitlist", kind: "waitlist", origin: benchOrigin, conns: 4,
		duration: 500 * time.Millisecond, rate: 200, want: 201})
	if err != nil {
		t.Fatal(err)
	}
	if rate.perSecond < 150 || rate.perSecond > 250 {
		t.Fatalf("at a rate of 200/s: %.0f/s", rate.perSecond)
	}
}

func TestRunLoad_RefusesNonLoopbackTargets(t *testing.T) {
	if _, err := runLoad(loadSpec{addr: "192.0.2.1:80", conns: 1, duration: time.Millisecond}); err == nil {
		t.Fatal("a non-loopback address was accepted")
	}
}
